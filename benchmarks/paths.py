"""Files read from a dataset stay inside it.

A task file (``task.yaml``) names sources, traces, specs and prompts by path. Every such path is resolved
through ``inside()``: relative to its base (the task folder, the data dir or a source checkout), and
refused when it is absolute, starts with ``~``, climbs out with ``..`` or leads out through a symlink,
so a hostile task file cannot put host files (``~/.ssh/id_rsa``, ``/etc/shadow``) into a prompt. A file a
loader finds by scanning the dataset (``prompts/*.txt``, ``pgo/<t>/<t>.tla``, traces, ``requirement.md``) and the
task folder itself go through ``dataset_file()`` (or ``read_dataset_text()``): a symlink out of the dataset is
refused with a ``DatasetEscapeError`` naming the file and the task, not where the link leads (a refusal may be
shown or stored where the host's paths are nobody's business).

>>> inside(Path("/data/tasks/t"), "src/main.go", task="t", field="source_files")
PosixPath('/data/tasks/t/src/main.go')
>>> read_dataset_text(Path("/data/sysmobench"), Path("/data/sysmobench/tasks/t/prompts/a.txt"), task="t")
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from sysmo.errors import DatasetEscapeError, TaskError


def inside(base: Path, relative: str | Path, *, task: str, field: str, start: Path | None = None) -> Path:
    """``start / relative`` resolved (``start`` defaults to ``base``), or TaskError naming the task and the
    field if it leaves ``base`` (``..`` may move between task folders of one dataset, never out of it)."""
    text = str(relative)
    where = f"task {task}: {field} {text!r}"
    if not text.strip() or "\0" in text:
        raise TaskError(f"{where} is not a usable path; name a file relative to {base}")
    if text.startswith("~") or PurePosixPath(text).is_absolute():
        raise TaskError(f"{where} is an absolute path; task files may only name paths inside {base}")
    root = base.resolve()
    origin = (start or base).resolve()
    lexical = Path(os.path.normpath(origin / text.replace("\\", "/")))
    if lexical != root and not lexical.is_relative_to(root):
        raise TaskError(f"{where} climbs out of {base} with '..'; task files may only name paths inside it")
    resolved = lexical.resolve()
    if resolved != root and not resolved.is_relative_to(root):
        raise DatasetEscapeError(f"{where} leads out of {base} through a symlink; refused")
    return resolved


def dataset_file(root: Path, path: Path, *, task: str) -> Path:
    """``path`` (under ``root``, found by a scan or named by task ``task``) resolved, symlinks followed; a
    ``DatasetEscapeError`` naming the file and the task when it leads out of ``root``."""
    top = root.resolve()
    resolved = Path(path).resolve()
    if resolved != top and not resolved.is_relative_to(top):
        raise DatasetEscapeError(f"task {task}: {path} leads out of the dataset {root} through a link; refused "
                                 "(a dataset file must be a file of the dataset, not a link to elsewhere)")
    return resolved


def read_dataset_text(root: Path, path: Path, *, task: str, errors: str = "strict") -> str:
    """The text of dataset file ``path``, read only once ``dataset_file`` has kept it inside ``root``."""
    return dataset_file(root, path, task=task).read_text(encoding="utf-8", errors=errors)
