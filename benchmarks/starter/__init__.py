"""The project's own starter suite: one folder per task with a ``task.yaml`` (schema in README.md), four kinds.

>>> tasks = load_starter_tasks()
>>> sorted({t.kind.value for t in tasks})
['architecture', 'sysml', 'tla', 'uml_class']
>>> load_task_folder(STARTER_DIR / "tla" / "spinlock").id
'starter/tla/spinlock'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sysmo.contracts.artifact import Artifact
from sysmo.benchmarks.paths import dataset_file, inside
from sysmo.benchmarks.sysmobench import load_invariants
from sysmo.benchmarks.yaml_load import safe_load
from sysmo.contracts.task import (
    BuggyVariant,
    SourceRef,
    Task,
    TaskInputs,
    TaskKind,
    TaskReferences,
    TraceSet,
)
from sysmo.errors import TaskError
from sysmo.log import get_logger

BENCHMARK = "starter"
STARTER_DIR = Path(__file__).resolve().parent
TASK_FILE = "task.yaml"
log = get_logger(__name__)


class TraceFiles(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Literal["ndjson", "pgo"] = "ndjson"
    files: list[str]
    description: str = ""


class BuggyFolder(BaseModel):
    """A known-buggy copy of the reference: every ``.tla``/``.cfg`` in ``folder`` (the reference's cfg if none)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    folder: str
    exposed_by: Literal["syntax", "runtime", "conformance", "invariants"]
    invariant: str | None = None
    description: str = ""


class Recording(BaseModel):
    """How the traces were recorded: ``entry`` is ``<module file stem>:<function>`` in the task's folder."""

    model_config = ConfigDict(extra="forbid")
    entry: str
    seeds: list[int]
    options: dict[str, Any] = Field(default_factory=dict)


class TaskFile(BaseModel):
    """The schema of a starter ``task.yaml``; paths are relative to the task's folder."""

    model_config = ConfigDict(extra="forbid")
    id: str
    kind: TaskKind
    title: str
    domain: str | None = None
    difficulty: int | None = Field(default=None, ge=1, le=5)
    key_grammar: list[str] = Field(default_factory=list)
    labels: dict[str, Any] = Field(default_factory=dict)
    requirement_file: str | None = None
    reference_file: str | None = None
    reference_files: list[str] = Field(default_factory=list)
    # TLA+ tasks
    module: str | None = None
    description_file: str | None = None
    trace_format_file: str | None = None
    source_files: list[str] = Field(default_factory=list)
    traces: TraceFiles | None = None
    invariants_file: str | None = None
    buggy_variants: list[BuggyFolder] = Field(default_factory=list)
    recording: Recording | None = None


def _within(task_folder: Path, relative: str, what: str, start: Path | None = None) -> Path:
    """``relative`` (from ``start``, default the task folder) inside the starter dataset, ``<root>/<kind>/<id>``'s
    root: ``..`` may reach a file shared by the tasks of a kind, never anything outside the dataset."""
    return inside(_dataset(task_folder), relative, task=task_folder.name, field=what, start=start or task_folder)


def _dataset(task_folder: Path) -> Path:
    """The dataset a task folder ``<root>/<kind>/<id>`` belongs to, found from its path as written (resolving the
    folder first would follow a linked task folder to wherever it points and take that place's grandparent)."""
    return Path(os.path.abspath(task_folder)).parent.parent.resolve()


def _read(folder: Path, relative: str, what: str, task_folder: Path | None = None) -> str:
    path = _within(task_folder or folder, relative, what, start=folder)
    if not path.is_file():
        raise TaskError(f"{folder / TASK_FILE}: {what} {relative!r} does not exist "
                        "(paths are relative to the task folder)")
    return path.read_text(encoding="utf-8")


def _artifact(kind: TaskKind, folder: Path, names: list[str], what: str, task_folder: Path | None = None) -> Artifact:
    return Artifact(language=kind.language,
                    files={Path(n).name: _read(folder, n, what, task_folder) for n in names})


def _buggy(spec: TaskFile, folder: Path, reference: Artifact | None) -> list[BuggyVariant]:
    variants = []
    for entry in spec.buggy_variants:
        root = _within(folder, entry.folder, f"buggy variant {entry.name} folder")
        files = sorted(p.name for p in root.glob("*") if p.suffix in (".tla", ".cfg", ".sysml", ".puml"))
        if not files:
            raise TaskError(f"{folder / TASK_FILE}: buggy variant {entry.name!r} has no model files in {entry.folder}")
        artifact = _artifact(spec.kind, root, files, f"buggy variant {entry.name}", task_folder=folder)
        for name, text in (reference.files.items() if reference else []):
            if name.endswith(".cfg"):
                artifact.files.setdefault(name, text)  # same constants as the reference unless the variant says
        variants.append(BuggyVariant(name=entry.name, artifact=artifact, exposed_by=entry.exposed_by,
                                     invariant=entry.invariant, description=entry.description.strip()))
    return variants


def load_task_folder(folder: Path) -> Task:
    """One starter task from ``<kind>/<id>/task.yaml``; TaskError (naming the file) if anything is off."""
    path = folder / TASK_FILE
    for own in (folder, path):  # a task folder or task file linked in from elsewhere is refused
        dataset_file(_dataset(folder), own, task=folder.name)
    try:
        spec = TaskFile.model_validate(safe_load(path.read_text(encoding="utf-8")) or {})
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise TaskError(f"{path} is not a valid starter task file (see benchmarks/starter/README.md): {exc}") from exc
    if spec.id != folder.name or spec.kind.value != folder.parent.name:
        raise TaskError(f"{path}: id {spec.id!r} and kind {spec.kind.value!r} must equal the folder names "
                        f"{folder.name!r} and {folder.parent.name!r}")
    references = [spec.reference_file] if spec.reference_file else []
    reference = _artifact(spec.kind, folder, references + spec.reference_files, "reference") \
        if references or spec.reference_files else None
    invariants = []
    if spec.invariants_file:
        _read(folder, spec.invariants_file, "invariants file")
        invariants = load_invariants(_within(folder, spec.invariants_file, "invariants file"))
    traces = None
    if spec.traces:
        for name in spec.traces.files:
            _read(folder, name, "trace")
        traces = TraceSet(format=spec.traces.format, files=[_within(folder, n, "trace") for n in spec.traces.files],
                          description=spec.traces.description.strip())
    sources = {Path(n).name: _read(folder, n, "source file") for n in spec.source_files}
    inputs = TaskInputs(
        requirement=_read(folder, spec.requirement_file, "requirement") if spec.requirement_file else None,
        description=_read(folder, spec.description_file, "description") if spec.description_file else None,
        trace_format=_read(folder, spec.trace_format_file, "trace format") if spec.trace_format_file else None,
        source_files=sources,
        source=SourceRef(files=spec.source_files, checkout=folder) if sources else None,
        traces=traces,
        module_name=spec.module,
    )
    labels = dict(spec.labels)
    if spec.recording:
        labels["recording"] = spec.recording.model_dump()
    return Task(
        id=f"{BENCHMARK}/{spec.kind.value}/{spec.id}", benchmark=BENCHMARK, kind=spec.kind, title=spec.title,
        inputs=inputs,
        references=TaskReferences(model=reference, invariants=invariants, traces=traces,
                                  buggy_variants=_buggy(spec, folder, reference)),
        domain=spec.domain, difficulty=spec.difficulty, key_grammar=spec.key_grammar, labels=labels,
    )


def task_folders(root: Path = STARTER_DIR) -> list[Path]:
    """Every ``<kind>/<id>/`` folder holding a task.yaml, kinds in TaskKind order, ids sorted."""
    return [folder for kind in TaskKind for folder in sorted((root / kind.value).glob(f"*/{TASK_FILE}"))
            for folder in [folder.parent]]


def load_starter_tasks() -> list[Task]:
    """All starter tasks of every kind (TLA+, SysML v2, class diagrams, architecture)."""
    tasks = [load_task_folder(folder) for folder in task_folders()]
    log.debug("starter.loaded", n=len(tasks))
    return tasks
