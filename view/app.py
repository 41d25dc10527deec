"""The ``sysmo view`` web app (Starlette + Jinja2, served by uvicorn on 127.0.0.1): read-only pages over a runs
directory. Every route is a GET; pages are server-rendered HTML with one local stylesheet and a little
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

Only requests naming the viewer by a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``, with the served port)
or by a host passed with ``--allow-host`` are answered (400 otherwise): a web page elsewhere cannot reach the
viewer through a DNS name that points at 127.0.0.1 (DNS rebinding). A store that cannot be read (a full or
read-only disk, a damaged file) gives the error page saying why, never a bare 500.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sysmo.errors import StorageError, SysmoError, storage_problem
from sysmo.log import get_logger
from sysmo.view import gather
from sysmo.view.models import FILTER_FIELDS, SORT_FIELDS, AttemptFilters

STATIC_DIR = Path(__file__).parent / "static"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
log = get_logger(__name__)


def split_host(header: str) -> tuple[str, str | None]:
    """A Host header as (name, port): ``[::1]:8765`` -> (``[::1]``, ``8765``), ``localhost`` -> (``localhost``, None)."""
    header = header.strip().lower()
    if header.startswith("["):
        name, _, rest = header.partition("]")
        return name + "]", rest[1:] if rest.startswith(":") else None
    name, colon, port = header.rpartition(":")
    return (name, port) if colon else (header, None)


class HostCheck:
    """ASGI middleware answering 400 to a request whose Host header is not an allowed name (with the served port
    when one is known)."""

    def __init__(self, app, names: tuple[str, ...], port: int | None, page) -> None:
        self.app, self.names, self.port, self.page = app, {n.lower() for n in names}, port, page

    def allowed(self, header: str) -> bool:
        name, port = split_host(header)
        return name in self.names and (port is None or self.port is None or port == str(self.port))

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
            if not self.allowed(header):
                log.warning("view.host_refused", host=header[:200])
                response = self.page(400, "this viewer answers only at 127.0.0.1, localhost or [::1] "
                                          "(start it with --allow-host NAME to use another name)")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _templates() -> Environment:
    env = Environment(loader=PackageLoader("sysmo.view", "templates"), autoescape=select_autoescape(["html"]))
    env.filters["money"] = lambda v: f"${v:.4f}"
    env.filters["num"] = lambda v, d=3: "" if v is None else f"{v:.{d}f}"
    env.globals["urlencode"] = lambda d: urlencode({k: v for k, v in d.items() if v not in ("", None, False)})
    return env


def create_app(runs_dir: Path, *, port: int | None = None, allow_hosts: tuple[str, ...] = ()) -> Starlette:
    """The viewer over ``runs_dir``, answering requests addressed to a loopback name or one of ``allow_hosts``
    (with ``port``, when given)."""
    runs_dir = Path(runs_dir)
    templates = _templates()

    def page(status: int, detail: str) -> HTMLResponse:
        return HTMLResponse(templates.get_template("error.html").render(status=status, detail=detail),
                            status_code=status)

    def render(name: str, **context) -> HTMLResponse:
        return HTMLResponse(templates.get_template(name).render(runs_dir=str(runs_dir), **context))

    def store_of(experiment_id: str):
        try:
            return gather.open_store(runs_dir, experiment_id)
        except StorageError as exc:
            raise HTTPException(503, f"the experiment store cannot be read: {exc}") from exc
        except SysmoError as exc:
            raise HTTPException(404, str(exc)) from exc

    async def experiments_page(request: Request) -> Response:
        try:
            found = gather.experiments(runs_dir)
        except StorageError as exc:
            raise HTTPException(503, f"the experiment store cannot be read: {exc}") from exc
        return render("experiments.html", experiments=found)

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
        if isinstance(exc, HTTPException):
            return page(exc.status_code, exc.detail)
        problem = storage_problem(exc)
        if problem is not None or isinstance(exc, SysmoError):
            # the runs directory's fault (a full or read-only disk, a damaged store), not the viewer's
            return page(503, f"the experiment store cannot be read: {problem or exc}")
        log.error("view.error", path=request.url.path, error=f"{type(exc).__name__}: {exc}"[:500])
        return page(500, f"internal error ({type(exc).__name__}); the viewer's log on stderr has the details")

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
        exception_handlers={HTTPException: error_page, Exception: error_page},
        middleware=[Middleware(HostCheck, names=(*LOOPBACK_NAMES, *allow_hosts), port=port, page=page)],
    )


def serve(runs_dir: Path, port: int = 8765, host: str = "127.0.0.1", allow_hosts: tuple[str, ...] = ()) -> None:
    """Serve the app until interrupted (local only: the host is the loopback address)."""
    import uvicorn

    uvicorn.run(create_app(runs_dir, port=port, allow_hosts=allow_hosts), host=host, port=port, log_level="warning")
