"""``sysmo view --bundle DIR``: the viewer's pages as a static site (HTML, CSS, JavaScript, the report's plots) that
opens from disk (``file://``) or from any static host, with no server.

The pages are the app's own (``create_app(..., static=True)``), fetched in-process with Starlette's TestClient by
following links from ``/``; every absolute link (``/e/...``, ``/static/...``) is rewritten into a path relative to
the page that holds it. What needed the server is done otherwise:

- the attempt table is rendered whole (no paging); its filters, text search and sorting are the same query
  parameters (``index.html?status=passed&sort=cost_usd``), applied in the browser by ``static/bundle.js`` over
  ``e/EXP/rows.js`` (the table's rows as data). The text search there matches the task, agent, model, status,
  attempt id and error (the server's also searches prompts, replies and diagnostics);
- a comparison is a page per linked pair (``e/EXP/compare/A--B.html``), up to ``max_compare`` pages; the attempt
  table's compare button opens the pair's page when it is in the copy and says so when it is not;
- the experiments page does not poll ``/progress.json`` (``progress.json`` is written once, as it was then);
- the CSV link is the whole table's CSV (the filters do not reach a static file).

A link the copy cannot follow (another experiment, a compare page past the limit, a page that answered an error)
loses its ``href`` and says why on hover.
"""

from __future__ import annotations

import json
import posixpath
import re
import shutil
from collections import deque
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, Field

from sysmo.errors import ConfigError
from sysmo.log import get_logger
from sysmo.view import gather
from sysmo.view.app import STATIC_DIR, create_app

log = get_logger(__name__)

MARKER = ".sysmo-bundle"  # names a folder this module wrote (which it may write over)
BUNDLE_SCRIPT = "bundle.js"
MAX_COMPARE = 2000  # compare pages written at most (each attempt links to every other attempt of its task)
LINK = re.compile(r'(?P<attr>\b(?:href|src|action))="(?P<url>/[^"]*)"')
SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
NOT_BUNDLED = "not in this static copy"


class BundleResult(BaseModel):
    """What ``write_bundle`` wrote."""

    directory: Path
    experiments: list[str]
    pages: int = 0  # HTML pages written
    files: int = 0  # every file of the bundle (pages, data, assets, plots)
    bytes: int = 0
    compare_pages: int = 0
    compare_left_out: int = 0  # compare links past ``max_compare``: shown without a link
    unreachable: dict[str, int] = Field(default_factory=dict)  # page -> HTTP status it answered (linked, not written)

    @property
    def megabytes(self) -> float:
        return self.bytes / 1_000_000


def _unescape(url: str) -> str:
    return url.replace("&amp;", "&")


def file_of(url: str) -> str | None:
    """The bundle's file for an absolute URL of the app, or None when the copy has no file for it. Query strings of
    the attempt table are kept by the caller (the page reads them); any other query names a different file."""
    parts = urlsplit(_unescape(url))
    path, query = parts.path, parse_qs(parts.query)
    segments = [s for s in path.split("/") if s]
    if path == "/":
        return "index.html"
    if path == "/favicon.ico":
        return "static/favicon.svg"
    if path == "/progress.json":
        return "progress.json"
    if segments[:1] == ["static"] and len(segments) == 2:
        return f"static/{segments[1]}"
    if segments[:1] != ["e"] or len(segments) < 2 or not all(SAFE_NAME.match(s) for s in segments):
        return None
    experiment, rest = segments[1], segments[2:]
    if not rest:
        return f"e/{experiment}/index.html"
    if rest == ["report"]:
        return f"e/{experiment}/report.html"
    if rest == ["attempts.csv"]:
        return f"e/{experiment}/attempts.csv"
    if len(rest) == 2 and rest[0] == "plots":
        return f"e/{experiment}/plots/{rest[1]}"
    if len(rest) == 2 and rest[0] == "a":
        return f"e/{experiment}/a/{rest[1]}.html"
    if len(rest) == 3 and rest[0] == "a" and rest[2] == "json":
        return f"e/{experiment}/a/{rest[1]}.json"
    if rest == ["compare"]:
        a, b = query.get("a", [""])[0], query.get("b", [""])[0]
        if a and b and SAFE_NAME.match(a) and SAFE_NAME.match(b):
            return f"e/{experiment}/compare/{a}--{b}.html"
    return None


def _is_table_with_query(url: str) -> bool:
    parts = urlsplit(_unescape(url))
    segments = [s for s in parts.path.split("/") if s]
    return len(segments) == 2 and segments[0] == "e" and bool(parts.query)


class _Crawl:
    """Fetch the app's pages from ``/`` and write them, links rewritten, under ``out``."""

    def __init__(self, runs_dir: Path, out: Path, experiments: list[str], max_compare: int) -> None:
        from starlette.testclient import TestClient

        self.client = TestClient(create_app(runs_dir, static=True, only=frozenset(experiments)),
                                 base_url="http://127.0.0.1")
        self.out, self.experiments, self.max_compare = out, set(experiments), max_compare
        self.result = BundleResult(directory=out, experiments=experiments)
        self.queued: dict[str, str] = {}  # file -> URL fetched for it
        self.todo: deque[str] = deque()
        self.failed: set[str] = set()

    def wanted(self, url: str, target: str) -> bool:
        """Whether the copy writes ``target`` (queued now if it is new)."""
        if target in self.queued:
            return target not in self.failed
        segments = target.split("/")
        if segments[0] == "e" and segments[1] not in self.experiments:
            return False
        if segments[0] == "e" and segments[2] == "compare":
            if self.result.compare_pages >= self.max_compare:
                self.result.compare_left_out += 1
                return False
            self.result.compare_pages += 1
        self.queued[target] = _unescape(url)
        self.todo.append(target)
        return True

    def rewrite(self, html: str, here: str) -> str:
        base = posixpath.dirname(here)

        def relative(match: re.Match) -> str:
            attr, url = match["attr"], match["url"]
            target = file_of(url)
            if target is None or not self.wanted(url, target):
                return f'data-not-bundled="{url}" title="{NOT_BUNDLED}"'
            link = posixpath.relpath(target, base or ".")
            if _is_table_with_query(url):
                link += "?" + urlsplit(url).query  # the table applies its filters in the browser
            return f'{attr}="{link}"'

        return LINK.sub(relative, html)

    def fetch(self, target: str) -> bytes | None:
        url = self.queued[target]
        response = self.client.get(url)
        if response.status_code != 200:
            self.failed.add(target)
            self.result.unreachable[url] = response.status_code
            log.warning("view.bundle.page_failed", url=url, status=response.status_code)
            return None
        return response.content

    def run(self) -> None:
        self.wanted("/", "index.html")
        for experiment in sorted(self.experiments):  # the attempt pages of every experiment, linked or not
            self.wanted(f"/e/{experiment}", f"e/{experiment}/index.html")
            self.wanted(f"/e/{experiment}/report", f"e/{experiment}/report.html")
            self.wanted(f"/e/{experiment}/attempts.csv", f"e/{experiment}/attempts.csv")
        while self.todo:
            target = self.todo.popleft()
            body = self.fetch(target)
            if body is None:
                continue
            if target.endswith(".html"):
                body = self.rewrite(body.decode("utf-8"), target).encode("utf-8")
                body = self.finish_page(body.decode("utf-8"), target).encode("utf-8")
                self.result.pages += 1
            self.write(target, body)
        # a page linking to one that answered an error was written before it was known: unlink those links now
        if self.failed:
            for target in self.queued:
                if target.endswith(".html") and target not in self.failed and (self.out / target).is_file():
                    path = self.out / target
                    path.write_text(self.unlink_failed(path.read_text(encoding="utf-8"), target), encoding="utf-8")

    def unlink_failed(self, html: str, here: str) -> str:
        base = posixpath.dirname(here) or "."
        for target in self.failed:
            link = posixpath.relpath(target, base)
            html = re.sub(rf'\b(?:href|src|action)="{re.escape(link)}(?:\?[^"]*)?"',
                          f'data-not-bundled="{link}" title="{NOT_BUNDLED}"', html)
        return html

    def finish_page(self, html: str, here: str) -> str:
        """Add the bundle's script (and, on an attempt table, its rows) to a page."""
        up = posixpath.relpath(".", posixpath.dirname(here) or ".")
        scripts = f'<script src="{posixpath.join(up, "static", BUNDLE_SCRIPT)}" defer></script>'
        parts = here.split("/")
        if len(parts) == 3 and parts[0] == "e" and parts[2] == "index.html":
            scripts = '<script src="rows.js"></script>' + scripts
        return html.replace("</head>", scripts + "</head>", 1)

    def write(self, target: str, body: bytes) -> None:
        path = self.out / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)


def _rows_script(runs_dir: Path, experiment: str, compare_files: list[str]) -> str:
    """``e/EXP/rows.js``: the attempt table's rows as data for static/bundle.js, and the compare pages written."""
    store = gather.open_store(runs_dir, experiment)
    try:
        rows = gather.attempt_rows(store, experiment)
    finally:
        store.close()
    data = {r.id: {**r.model_dump(include={"task_id", "kind", "agent", "model", "sample_index", "arm", "status",
                                              "failed_stage", "rounds", "cost_usd", "tokens", "duration_s",
                                              "error_kind", "error", "scores"})} for r in rows}
    pairs = [Path(f).stem for f in compare_files]
    # JSON inside a <script>-loaded file: "</" cannot end anything here, but keep it out as in inline scripts
    text = json.dumps({"rows": data, "compare": pairs}, separators=(",", ":")).replace("</", "<\\/")
    return f"window.SYSMO_BUNDLE = {text};\n"


def _prepare(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--bundle {out}: a file is there; name a folder (it is made if missing)")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ConfigError(f"--bundle {out}: the folder is not empty and is not a bundle sysmo wrote; "
                          "name an empty or new folder")
    if out.is_dir():
        for child in out.iterdir():  # an earlier bundle: replaced whole, no page of a deleted attempt left
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    out.mkdir(parents=True, exist_ok=True)


def write_bundle(runs_dir: Path, out: Path, experiments: list[str] | None = None,
                 max_compare: int = MAX_COMPARE) -> BundleResult:
    """Write the static site of ``experiments`` (default: every experiment of ``runs_dir``) into ``out``."""
    runs_dir, out = Path(runs_dir), Path(out)
    found = gather.experiment_dirs(runs_dir)
    chosen = list(found) if not experiments else list(dict.fromkeys(experiments))
    missing = [e for e in chosen if e not in found]
    if missing:
        raise ConfigError(f"no experiment {', '.join(missing)} in {runs_dir} "
                          f"(there: {', '.join(found) or 'none'})")
    if not chosen:
        raise ConfigError(f"no experiment in {runs_dir} (a folder with a {gather.STORE_FILE}): nothing to bundle")
    _prepare(out)
    crawl = _Crawl(runs_dir, out, chosen, max_compare)
    crawl.run()
    (out / "static").mkdir(exist_ok=True)
    for asset in STATIC_DIR.iterdir():
        if asset.is_file():
            shutil.copyfile(asset, out / "static" / asset.name)
    for experiment in chosen:
        compares = sorted(t for t in crawl.queued if t.startswith(f"e/{experiment}/compare/") and t not in crawl.failed)
        (out / "e" / experiment).mkdir(parents=True, exist_ok=True)
        (out / "e" / experiment / "rows.js").write_text(_rows_script(runs_dir, experiment, compares), encoding="utf-8")
    # the live figures as they were when bundled (the static experiments page does not poll them)
    progress = {k: v for k, v in gather.progress(runs_dir).items() if k in chosen}
    (out / "progress.json").write_text(json.dumps(progress, indent=1, default=str), encoding="utf-8")
    (out / MARKER).write_text("written by sysmo view --bundle: this folder is replaced whole when bundled again\n",
                              encoding="utf-8")
    files = [p for p in out.rglob("*") if p.is_file() and p.name != MARKER]
    result = crawl.result
    result.files, result.bytes = len(files), sum(p.stat().st_size for p in files)
    log.info("view.bundle.written", directory=str(out), experiments=chosen, files=result.files, bytes=result.bytes,
             compare_left_out=result.compare_left_out, unreachable=len(result.unreachable))
    return result
