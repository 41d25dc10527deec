"""All tasks in one place: the published families found under a data directory, plus the starter suite.

>>> tasks = load_tasks(data_dir=Path("/data"))                 # every family present, plus starter tasks
>>> tasks = load_tasks(data_dir=Path("/data"), families=["sysmbench"])
>>> task = get_task("sysmobench/spin", data_dir=Path("/data"))
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel

from sysmo.benchmarks import ardoco, datadir, oodeval, r2abench, starter, sysmbench, sysmobench
from sysmo.contracts.task import Task
from sysmo.errors import TaskError, UnknownNameError
from sysmo.log import get_logger

STARTER = "starter"
log = get_logger(__name__)


def _sysmobench(root: Path, sources_dir: Path | None) -> list[Task]:
    return sysmobench.load(root, sources_dir=datadir.resolve_sources_dir(sources_dir), checkouts=datadir.configured_checkouts())


# family -> loader(root of the family's folder, sources_dir); order = display order
LOADERS: dict[str, Callable[[Path, Path | None], list[Task]]] = {
    "sysmobench": _sysmobench,
    "sysmbench": lambda root, _: sysmbench.load(root),
    "oodeval": lambda root, _: oodeval.load(root),
    "r2abench": lambda root, _: r2abench.load(root),
    "ardoco": lambda root, _: ardoco.load(root),
}
FAMILIES: tuple[str, ...] = (*LOADERS, STARTER)


class FamilyStatus(BaseModel):
    """Whether one family's data is available, and where it is (or was expected)."""

    family: str
    present: bool
    path: str | None = None
    upstream: str | None = None


def load_starter_tasks() -> list[Task]:
    """The project's own tasks (``sysmo.benchmarks.starter``)."""
    return starter.load_starter_tasks()


def family_statuses(data_dir: Path | None) -> list[FamilyStatus]:
    """Which families are present under ``data_dir`` (the starter suite always is)."""
    statuses = [
        FamilyStatus(
            family=name,
            present=datadir.dataset_present(data_dir, name),
            path=str(dataset.path(data_dir)) if data_dir else None,
            upstream=dataset.upstream,
        )
        for name, dataset in datadir.DATASETS.items()
    ]
    return statuses + [FamilyStatus(family=STARTER, present=True, path="(in the sysmo package)")]


def _check_families(families: Iterable[str]) -> list[str]:
    names = list(dict.fromkeys(families))
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        raise UnknownNameError(f"unknown benchmark family {', '.join(unknown)}; choose from {', '.join(FAMILIES)}")
    return names


def load_tasks(
    data_dir: Path | str | None = None,
    families: Iterable[str] | None = None,
    sources_dir: Path | str | None = None,
) -> list[Task]:
    """Tasks of the named families (default: every family present, plus the starter suite), sorted by family then id.

    A family named explicitly but missing raises DataMissingError. With no families named, a missing data directory
    is an error only if it was given or configured and does not exist; families absent under it are skipped.
    """
    resolved = datadir.resolve_data_dir(data_dir)
    if families:
        wanted = _check_families(families)
        published = [f for f in wanted if f != STARTER]
        # a family whose folder an environment variable names ($SYSMO_R2ABENCH_DIR) needs no data directory
        needs_root = [f for f in published if datadir.DATASETS[f].override() is None]
        root = datadir.require_data_dir(data_dir) if needs_root else resolved
        roots = {f: datadir.dataset_dir(root, f) for f in published}
    else:
        wanted = list(FAMILIES)
        root = datadir.require_data_dir(data_dir) if resolved is not None else None
        roots = {f: datadir.dataset_dir(root, f) for f in LOADERS if datadir.dataset_present(root, f)}
    tasks: list[Task] = []
    for family in wanted:
        if family == STARTER:
            tasks += load_starter_tasks()
        elif family in roots:
            tasks += LOADERS[family](roots[family], Path(sources_dir) if sources_dir else None)
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise TaskError(f"task id {task.id} occurs twice; task ids must be unique across benchmarks")
        seen.add(task.id)
    log.debug("tasks.loaded", n=len(tasks), families=wanted, data_dir=str(root) if root else None)
    return tasks


def family_of(task_id: str) -> str | None:
    """The family a task id belongs to, from its prefix (``sysmbench/17`` -> ``sysmbench``)."""
    prefix = task_id.split("/", 1)[0]
    return prefix if prefix in FAMILIES else None


def get_task(task_id: str, data_dir: Path | str | None = None, sources_dir: Path | str | None = None) -> Task:
    """One task by id; UnknownNameError (with close matches) if there is none."""
    family = family_of(task_id)
    tasks = load_tasks(data_dir, families=[family] if family else None, sources_dir=sources_dir)
    by_id = {t.id: t for t in tasks}
    if task_id in by_id:
        return by_id[task_id]
    close = difflib.get_close_matches(task_id, list(by_id), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `sysmo tasks list` shows the ids"
    raise UnknownNameError(f"no task {task_id!r}{hint}")
