"""The ``sysmo view`` web app (Starlette + Jinja2, served by uvicorn on 127.0.0.1): read-only pages over a runs
directory.

Every route is a GET; pages are server-rendered HTML with one local stylesheet and a little
vanilla JavaScript (no build step, nothing fetched from the internet).

Pages:
- ``/``: the experiments (status, done of planned, pass rate, errors by kind, cost, CONTROL/REPLAY/LIVE label,
  isolation); running ones refresh from ``/progress.json`` without a reload;
- ``/e/{experiment}``: per (agent, model, kind) counts linking to the attempts behind them, then the attempt
  table with a score column per stage, filtered, searched (``q``), sorted and paged by query parameters
  (``agent``, ``model``, ``kind``, ``task``, ``status``, ``failed_stage``, ``error_kind``, ``q``, ``sort``,
  ``desc``, ``page``); ``/e/{experiment}/attempts.csv`` is the filtered table as CSV;
- ``/e/{experiment}/a/{attempt}``: one attempt: its outcome and first failing diagnostic, time per round split
  into model / tool / queue, the run's settings, the agent's graph with the steps taken, timeline, rounds,
  diffs, diagnostics, scores, the state at each checkpoint; ``.../json`` gives the same view model as JSON;
- ``/e/{experiment}/compare?a=ID&b=ID``: two attempts of one task, round beside round, and a diff of their
  final models;
- ``/e/{experiment}/report``: the comparison page: leaderboards per task kind (every number a link to its
  attempts, CIs as bars, the best marked), then what each level buys (the paired tests, significant ones after
  correction marked with *), the report's plots (``/e/{experiment}/plots/{file}``) and a task x agent / model
  matrix of every sample;
- ``/compare?e=A&e=B[&e=C]``: ``sysmo compare``'s paired analysis of two or more experiments (picked on ``/``);
- ``/e/{experiment}/live.json``: a running experiment's status and store state; its pages ask it every 2 s and
  load their content again when it changed (new attempts, a status), until the run is over.

Only requests naming the viewer by a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``, with the served port)
or by a host passed with ``--allow-host`` are answered (400 otherwise): a web page elsewhere cannot reach the
viewer through a DNS name that points at 127.0.0.1 (DNS rebinding). A store that cannot be read (a full or
read-only disk, a damaged file) gives the error page saying why, never a bare 500.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup, escape
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sysmo.errors import StorageError, SysmoError, storage_problem
from sysmo.log import get_logger
from sysmo.view import gather
from sysmo.view.models import FILTER_FIELDS, SORT_FIELDS, AttemptFilters
from sysmo.view.report_cache import cached_report_view, store_stamp

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


class StoreCache:
    """Values computed from an experiment's store, kept while its files are unchanged (size and mtime of
    results.sqlite and its write-ahead log): the report's bootstrap CIs and paired tests are computed once per
    state of the store, not once per page view."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], tuple[tuple[Any, ...], Any]] = {}

    @staticmethod
    def stamp(directory: Path) -> tuple[Any, ...]:
        return store_stamp(directory)

    def get(self, directory: Path, name: str, compute: Any) -> Any:
        key, stamp = (str(directory), name), self.stamp(directory)
        with self._lock:
            kept = self._values.get(key)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        value = compute()
        with self._lock:
            self._values[key] = (stamp, value)
        return value


def live_stamp(directory: Path) -> str:
    """The state of an experiment's store as text: results.sqlite and its write-ahead log (``StoreCache.stamp``),
    and the files of the attempts running now (``graphs.live``: written as each round finishes)."""
    from sysmo.graphs.live import LIVE_DIR

    running = []
    for path in sorted((directory / LIVE_DIR).glob("*.json")):
        try:
            running.append((path.name, path.stat().st_mtime_ns))
        except OSError:  # stored and removed between the listing and the look
            continue
    return repr((StoreCache.stamp(directory), running))


def _templates(static: bool = False) -> Environment:
    env = Environment(loader=PackageLoader("sysmo.view", "templates"), autoescape=select_autoescape(["html"]))
    env.globals["static"] = static  # pages rendered for `sysmo view --bundle` (no server behind them)
    env.filters["money"] = lambda v: f"${v:.4f}"
    env.filters["num"] = lambda v, d=3: "" if v is None else f"{v:.{d}f}"
    env.globals["urlencode"] = lambda d: urlencode({k: v for k, v in d.items() if v not in ("", None, False)})
    env.filters["score"] = lambda v: "—" if v is None else f"{v:.3f}"
    env.filters["short_task"] = gather.short_task
    env.filters["prompt_text"] = gather.prompt_text
    env.filters["pct"] = lambda v: "—" if v is None else f"{100 * v:.0f}%"
    # a cell's words each kept whole (a number such as 8.84e-05 is not broken at its hyphen); lines break between them
    # an identifier (base_modeling, mockllm/control, starter/uml_class/library_loans) may break after _ / - . and
    # nowhere else, so a narrow cell wraps it at its joints instead of running into the next cell
    env.filters["name"] = lambda v: Markup(re.sub(r"([_/.-])", r"\1<wbr>", str(escape(v))))
    env.filters["words"] = lambda v: Markup(" ".join(f'<span class="w">{escape(t)}</span>' for t in str(v).split(" ")))
    return env


def create_app(runs_dir: Path, *, port: int | None = None, allow_hosts: tuple[str, ...] = (), static: bool = False,
               only: frozenset[str] | None = None) -> Starlette:
    """The viewer over ``runs_dir``, answering requests addressed to a loopback name or one of ``allow_hosts``
    (with ``port``, when given). ``static`` renders pages for a static copy (view/bundle.py): the attempt table on
    one page, no live polling; ``only`` lists the experiments shown (all when None)."""
    runs_dir = Path(runs_dir)
    templates = _templates(static)

    def page(status: int, detail: str) -> HTMLResponse:
        return HTMLResponse(templates.get_template("error.html").render(status=status, detail=detail),
                            status_code=status)

    def render(name: str, **context) -> HTMLResponse:
        experiment = context.get("experiment")
        if experiment is not None and experiment.status == "running":  # the page follows the run (app.js)
            context.setdefault("live", {"url": f"/e/{experiment.id}/live.json",
                                        "stamp": live_stamp(runs_dir / experiment.id)})
        return HTMLResponse(templates.get_template(name).render(runs_dir=str(runs_dir), **context))

    def store_of(experiment_id: str):
        try:
            return gather.open_store(runs_dir, experiment_id)
        except StorageError as exc:
            raise HTTPException(503, f"the experiment store cannot be read: {exc}") from exc
        except SysmoError as exc:
            raise HTTPException(404, str(exc)) from exc

    cache = StoreCache()

    def rows_of(store, experiment_id: str) -> list:
        return cache.get(store.path.parent, "rows", lambda: gather.attempt_rows(store, experiment_id))

    def summary_of(store, experiment_id: str):
        return cache.get(store.path.parent, "summary",
                         lambda: gather.experiment_summary(store, experiment_id, rows_of(store, experiment_id)))

    async def experiments_page(request: Request) -> Response:
        try:
            found = [e for e in gather.experiments(runs_dir, summary_of) if only is None or e.id in only]
        except StorageError as exc:
            raise HTTPException(503, f"the experiment store cannot be read: {exc}") from exc
        return render("experiments.html", experiments=found)

    async def progress_json(request: Request) -> Response:
        return JSONResponse(gather.progress(runs_dir))

    async def live_json(request: Request) -> Response:
        """A running experiment's status and the state of its store: a page that shows it reloads its content when
        the stamp changes (new attempts stored, a status changed) and stops asking once the run is over."""
        experiment_id = request.path_params["experiment"]
        store = store_of(experiment_id)
        try:
            status = store.experiment(experiment_id).get("status") or ""
            attempts = store.query("SELECT COUNT(*) AS n FROM attempts WHERE experiment_id=?", (experiment_id,))[0]["n"]
        finally:
            store.close()
        return JSONResponse({"status": status, "attempts": attempts, "stamp": live_stamp(store.path.parent)},
                            headers={"cache-control": "no-store"})

    async def favicon(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    def _filtered(request: Request, experiment_id: str):
        params = {k: v for k, v in request.query_params.items() if k in (*FILTER_FIELDS, "q", "sort", "desc", "page")}
        try:
            page = max(1, int(params.get("page") or 1))
        except ValueError:
            page = 1
        descending = params.get("desc", "").lower() in ("1", "true")  # the headers' links write desc=True
        filters = AttemptFilters.model_validate({**params, "desc": descending, "page": page})
        store = store_of(experiment_id)
        try:
            summary, rows = summary_of(store, experiment_id), rows_of(store, experiment_id)
            found = gather.search_ids(store, experiment_id, filters.q.strip()) if filters.q.strip() else None
        finally:
            store.close()
        return summary, rows, filters, gather.apply_filters(rows, filters, found)

    async def attempts_page(request: Request) -> Response:
        experiment_id = request.path_params["experiment"]
        summary, rows, filters, shown = _filtered(request, experiment_id)
        # a static copy has no server to page: every row, filtered and sorted in the browser (static/bundle.js)
        page_rows, pages = gather.page_of(shown, filters.page, size=max(1, len(shown)) if static else gather.PAGE_SIZE)
        return render("attempts.html", experiment=summary, rows=page_rows, matched=len(shown), total=len(rows),
                      running=running_now(experiment_id, rows) if summary.status == "running" else [],
                      page=min(filters.page, pages), pages=pages, stages=gather.view_stages(rows, shown),
                      sort_stages=gather.stage_columns(rows),
                      groups=gather.group_summaries(rows), filters=filters, values=gather.filter_values(rows),
                      filter_fields=FILTER_FIELDS, sort_fields=SORT_FIELDS)

    async def attempts_csv(request: Request) -> Response:
        experiment_id = request.path_params["experiment"]
        _, rows, _, shown = _filtered(request, experiment_id)
        return Response(gather.attempts_csv(shown, gather.stage_columns(rows)), media_type="text/csv",
                        headers={"content-disposition": f'attachment; filename="{experiment_id}-attempts.csv"'})

    async def plot_file(request: Request) -> Response:
        experiment_id, name = request.path_params["experiment"], request.path_params["name"]
        directory = gather.experiment_dirs(runs_dir).get(experiment_id)
        # only a file the report's plot folder lists: no path from the URL reaches the disk
        if directory is None or name not in {p.name for p in gather.plots_of(directory)}:
            raise HTTPException(404, f"no plot {name!r} in experiment {experiment_id!r}")
        return FileResponse(directory / "report" / "plots" / name, media_type="image/png")

    def _attempt(experiment_id: str, attempt_id: str, full: bool = True):
        store = store_of(experiment_id)
        try:
            view = gather.attempt_view(store, attempt_id, rows_of(store, experiment_id), full=full)
        except SysmoError as exc:
            raise HTTPException(404, str(exc)) from exc
        finally:
            store.close()
        if view.row.experiment_id != experiment_id:
            raise HTTPException(404, f"attempt {attempt_id} is not in experiment {experiment_id}")
        return view

    async def attempt_page(request: Request) -> Response:
        experiment_id = request.path_params["experiment"]
        attempt_id = request.path_params["attempt"]
        running = live_attempt(experiment_id, attempt_id)
        if running is not None:  # not stored yet: its rounds so far, and the page follows it (app.js)
            return running
        view = _attempt(experiment_id, attempt_id)
        return render("attempt.html", experiment_id=experiment_id, a=view)

    def running_now(experiment_id: str, rows: list) -> list:
        from sysmo.graphs.live import running_attempts

        return running_attempts(runs_dir / experiment_id, {r.id for r in rows})

    def live_attempt(experiment_id: str, attempt_id: str) -> Response | None:
        """The page of an attempt still running (``graphs.live``'s file of its rounds), or None."""
        from sysmo.graphs.live import live_path, LiveAttempt

        directory = gather.experiment_dirs(runs_dir).get(experiment_id)
        path = live_path(directory, attempt_id) if directory is not None and attempt_id.isalnum() else None
        if path is None or not path.is_file():
            return None
        store = store_of(experiment_id)
        try:
            if store.query("SELECT 1 FROM attempts WHERE id=?", (attempt_id,)):
                return None  # stored meanwhile: the full page
            summary = summary_of(store, experiment_id)
        finally:
            store.close()
        try:
            attempt = LiveAttempt.model_validate_json(path.read_text())
        except (OSError, ValueError):
            return None
        return render("live_attempt.html", experiment=summary, r=attempt)

    async def attempt_json(request: Request) -> Response:
        view = _attempt(request.path_params["experiment"], request.path_params["attempt"])
        return JSONResponse(view.to_json())

    async def compare_page(request: Request) -> Response:
        experiment_id = request.path_params["experiment"]
        left, right = request.query_params.get("a"), request.query_params.get("b")
        if not left or not right:
            raise HTTPException(400, "compare needs two attempts: ?a=ID&b=ID")
        a, b = _attempt(experiment_id, left, full=False), _attempt(experiment_id, right, full=False)
        if a.row.task_id != b.row.task_id:
            raise HTTPException(400, f"{a.row.id} is of task {a.row.task_id} and {b.row.id} of task {b.row.task_id}: "
                                     "only attempts of one task compare (their rounds and final models line up); "
                                     "pick two attempts of one task")
        rounds = gather.aligned_rounds(a, b)
        return render("compare.html", experiment_id=experiment_id, pair=[a, b], rounds=rounds,
                      prompt_diffs=gather.prompt_diffs(rounds), settings=gather.side_settings(a, b),
                      steps=gather.step_pairs(a, b), final_diff=gather.final_diff(a, b))

    async def cross_compare_page(request: Request) -> Response:
        """``/compare?e=A&e=B[&e=C][&factor=F][&correction=holm|bh]``: ``sysmo compare``'s analysis as a page."""
        from sysmo.errors import AnalysisError
        from sysmo.evals.paired import CORRECTION_NAMES
        from sysmo.view.cross import cross_comparison

        chosen = list(dict.fromkeys(request.query_params.getlist("e")))
        if len(chosen) < 2:
            raise HTTPException(400, "compare needs two or more experiments: pick them on the experiments page "
                                     "(/compare?e=A&e=B)")
        correction = request.query_params.get("correction") or "holm"
        if correction not in CORRECTION_NAMES:
            raise HTTPException(400, f"correction must be holm or bh, not {correction!r}")
        found = gather.experiment_dirs(runs_dir)
        missing = [e for e in chosen if e not in found]
        if missing:
            raise HTTPException(404, f"no experiment {', '.join(missing)} in {runs_dir}")
        factors = [f for f in request.query_params.getlist("factor") if f]
        try:
            result = cross_comparison([found[e] for e in chosen], factors, correction)
        except AnalysisError as exc:
            raise HTTPException(400, str(exc)) from exc
        return render("cross_compare.html", c=result)

    async def report_page(request: Request) -> Response:
        experiment_id = request.path_params["experiment"]
        store = store_of(experiment_id)
        try:
            summary, rows = summary_of(store, experiment_id), rows_of(store, experiment_id)
            report = cache.get(store.path.parent, "report", lambda: cached_report_view(store, experiment_id, rows))
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
            Route("/progress.json", progress_json),
            Route("/e/{experiment}/live.json", live_json),
            Route("/favicon.ico", favicon),
            Route("/compare", cross_compare_page),
            Route("/e/{experiment}", attempts_page),
            Route("/e/{experiment}/attempts.csv", attempts_csv),
            Route("/e/{experiment}/plots/{name}", plot_file),
            Route("/e/{experiment}/compare", compare_page),
            Route("/e/{experiment}/report", report_page),
            Route("/e/{experiment}/a/{attempt}", attempt_page),
            Route("/e/{experiment}/a/{attempt}/json", attempt_json),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        exception_handlers={HTTPException: error_page, Exception: error_page},
        middleware=[Middleware(HostCheck, names=(*LOOPBACK_NAMES, *allow_hosts), port=port, page=page)],
    )


def warm_up() -> None:
    """What the first report and attempt pages would otherwise pay for (the report's modules with matplotlib, every
    agent's compiled graph), done in the background while the user opens the browser."""
    from sysmo.agents.registry import AGENT_NAMES
    from sysmo.view.graph_svg import agent_graph

    try:
        import sysmo.evals.report  # noqa: F401  (the report page's notes and levels; imports matplotlib)

        for agent in AGENT_NAMES:
            agent_graph(agent, [])  # builds and keeps each variant of the agent's graph
    except Exception as exc:  # noqa: BLE001 - a page that needs it computes it then, and says why if it fails
        log.warning("view.warm_up_failed", error=f"{type(exc).__name__}: {exc}")


def serve(runs_dir: Path, port: int = 8765, host: str = "127.0.0.1", allow_hosts: tuple[str, ...] = ()) -> None:
    """Serve the app until interrupted (local only: the host is the loopback address)."""
    import uvicorn

    threading.Thread(target=warm_up, name="sysmo-view-warm-up", daemon=True).start()
    uvicorn.run(create_app(runs_dir, port=port, allow_hosts=allow_hosts), host=host, port=port, log_level="warning")
