"""The report page's view model kept on disk beside the report (``<experiment>/report/view.json``), stamped with the
state of the experiment's store: ``sysmo report`` and ``sysmo run`` write it as they write the report, so the
viewer's first request of the page reads it instead of computing the leaderboards' bootstrap CIs and the paired
tests again; a store that changed since (a resumed run, a fork) makes the page compute it anew, and keep that."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import structlog

from sysmo.store import Store

STORE_FILE = "results.sqlite"
VIEW_FILE = "view.json"
log = structlog.get_logger(__name__)


def store_stamp(directory: Path) -> tuple[Any, ...]:
    """Size and mtime of results.sqlite and of its write-ahead log (an empty log, which any reader's open makes
    with a fresh mtime, holds no change and counts as none)."""
    out = []
    for name in (STORE_FILE, STORE_FILE + "-wal"):
        path = Path(directory) / name
        stat = path.stat() if path.exists() else None
        out.append((stat.st_size, stat.st_mtime_ns) if stat and stat.st_size else None)
    return tuple(out)


# the view model's own version: a page kept by an older sysmo (fewer sections) is computed again
VIEW_VERSION = 2


def _stamp_text(directory: Path) -> str:
    return json.dumps([VIEW_VERSION, store_stamp(directory)])


def cached_report_view(store: Store, experiment_id: str, rows: list | None = None) -> Any:
    """The report page's ``ReportView``: from view.json when its stamp is the store's, else computed and kept."""
    from sysmo.view.gather import report_view
    from sysmo.view.models import ReportView

    directory = store.path.parent
    path = directory / "report" / VIEW_FILE
    stamp = _stamp_text(directory)
    if path.is_file():
        try:
            kept = json.loads(path.read_text())
            if kept.get("stamp") == stamp:
                return ReportView.model_validate(kept["view"])
        except (ValueError, KeyError, OSError) as exc:  # a damaged or foreign file: computed again
            log.warning("view.report_cache_unreadable", path=str(path), error=str(exc)[:200])
    view = report_view(store, experiment_id, rows)
    _keep(path, stamp, view)
    return view


def _keep(path: Path, stamp: str, view: Any) -> None:
    if not path.parent.is_dir():
        return  # no report written yet: nothing to keep beside
    try:
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps({"stamp": stamp, "view": view.model_dump(mode="json")}))
        os.replace(partial, path)
    except OSError as exc:  # a read-only runs directory: the page still shows, computed each time the app starts
        log.warning("view.report_cache_not_written", path=str(path), error=str(exc)[:200])


def save_report_view(directory: Path) -> Path:
    """Compute the report page's view model of the experiment in ``directory`` and keep it (after
    ``evals.report.write_report``); returns the file's path."""
    directory = Path(directory)
    store = Store(directory / STORE_FILE)
    try:
        from sysmo.view.gather import report_view

        view = report_view(store, directory.name)
    finally:
        store.close()
    path = directory / "report" / VIEW_FILE
    _keep(path, _stamp_text(directory), view)
    return path
