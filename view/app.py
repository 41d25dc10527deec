"""The ``sysmo view`` web app (Starlette + Jinja2, served by uvicorn on 127.0.0.1): read-only pages over a runs
directory.

Every route is a GET; pages are server-rendered HTML with one local stylesheet and a little
vanilla JavaScript (no build step, nothing fetched from the internet).

Pages:
- ``/``: the experiments (status, counts, errors by kind, cost, CONTROL/REPLAY/LIVE label, isolation);
- ``/e/{experiment}``: per (agent, model, kind) counts linking to the attempts behind them, then the attempt
  table, filtered and sorted by query parameters (``agent``, ``model``, ``kind``, ``task``, ``status``,
  ``failed_stage``, ``error_kind``, ``sort``, ``desc``);
- ``/e/{experiment}/a/{attempt}``: one attempt's timeline, rounds, diffs, diagnostics, scores, checkpoints;
  ``.../json`` gives the same view model as JSON;
- ``/e/{experiment}/compare?a=ID&b=ID``: two attempts side by side;
- ``/e/{experiment}/report``: the report's leaderboards per task kind, every number a link to its attempts.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sysmo.errors import SysmoError
from sysmo.view import gather
from sysmo.view.models import FILTER_FIELDS, SORT_FIELDS, AttemptFilters

STATIC_DIR = Path(__file__).parent / "static"


def _templates() -> Environment:
    env = Environment(loader=PackageLoader("sysmo.view", "templates"), autoescape=select_autoescape(["html"]))
    env.filters["money"] = lambda v: f"${v:.4f}"
    env.filters["num"] = lambda v, d=3: "" if v is None else f"{v:.{d}f}"
    env.globals["urlencode"] = lambda d: urlencode({k: v for k, v in d.items() if v not in ("", None, False)})
    return env


def create_app(runs_dir: Path) -> Starlette:
    runs_dir = Path(runs_dir)
    templates = _templates()

    def render(name: str, **context) -> HTMLResponse:
        return HTMLResponse(templates.get_template(name).render(runs_dir=str(runs_dir), **context))

    def store_of(experiment_id: str):
        try:
            return gather.open_store(runs_dir, experiment_id)
        except SysmoError as exc:
            raise HTTPException(404, str(exc)) from exc

    async def experiments_page(request: Request) -> Response:
        return render("experiments.html", experiments=gather.experiments(runs_dir))

    async def attempts_page(request: Request) -> Response:
        experiment_id = request.path_params["experiment"]
        store = store_of(experiment_id)
        try:
            summary = gather.experiment_summary(store, experiment_id)
            rows = gather.attempt_rows(store, experiment_id)
        finally:
            store.close()
        params = {k: v for k, v in request.query_params.items() if k in (*FILTER_FIELDS, "sort", "desc")}
        filters = AttemptFilters.model_validate({**params, "desc": params.get("desc") in ("1", "true")})
        shown = gather.apply_filters(rows, filters)
        return render("attempts.html", experiment=summary, rows=shown, total=len(rows),
                      groups=gather.group_summaries(rows), filters=filters, values=gather.filter_values(rows),
                      filter_fields=FILTER_FIELDS, sort_fields=SORT_FIELDS)

    def _attempt(experiment_id: str, attempt_id: str):
        store = store_of(experiment_id)
        try:
            view = gather.attempt_view(store, attempt_id)
        except SysmoError as exc:
            raise HTTPException(404, str(exc)) from exc
        finally:
            store.close()
        if view.row.experiment_id != experiment_id:
            raise HTTPException(404, f"attempt {attempt_id} is not in experiment {experiment_id}")
        return view

    async def attempt_page(request: Request) -> Response:
        experiment_id = request.path_params["experiment"]
        view = _attempt(experiment_id, request.path_params["attempt"])
        return render("attempt.html", experiment_id=experiment_id, a=view)

    async def attempt_json(request: Request) -> Response:
        view = _attempt(request.path_params["experiment"], request.path_params["attempt"])
        return JSONResponse(view.to_json())

    async def compare_page(request: Request) -> Response:
        experiment_id = request.path_params["experiment"]
        left, right = request.query_params.get("a"), request.query_params.get("b")
        if not left or not right:
            raise HTTPException(400, "compare needs two attempts: ?a=ID&b=ID")
        a, b = _attempt(experiment_id, left), _attempt(experiment_id, right)
        return render("compare.html", experiment_id=experiment_id, pair=[a, b],
                      same_task=a.row.task_id == b.row.task_id)

    async def report_page(request: Request) -> Response:
        experiment_id = request.path_params["experiment"]
        store = store_of(experiment_id)
        try:
            summary = gather.experiment_summary(store, experiment_id)
            report = gather.report_view(store, experiment_id)
        finally:
            store.close()
        return render("report.html", experiment=summary, report=report)

    async def error_page(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return HTMLResponse(templates.get_template("error.html").render(status=status, detail=detail), status_code=status)

    return Starlette(
        routes=[
            Route("/", experiments_page),
            Route("/e/{experiment}", attempts_page),
            Route("/e/{experiment}/compare", compare_page),
            Route("/e/{experiment}/report", report_page),
            Route("/e/{experiment}/a/{attempt}", attempt_page),
            Route("/e/{experiment}/a/{attempt}/json", attempt_json),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        exception_handlers={HTTPException: error_page},
    )


def serve(runs_dir: Path, port: int = 8765, host: str = "127.0.0.1") -> None:
    """Serve the app until interrupted (local only: the host is the loopback address)."""
    import uvicorn

    uvicorn.run(create_app(runs_dir), host=host, port=port, log_level="warning")
