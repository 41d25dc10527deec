"""Loader for OODEval-style tasks (natural-language requirement -> PlantUML class diagram), in a format defined here.

The paper's 50 tasks are not public, so sysmo defines the on-disk format; either form (or both) may sit under
``<data_dir>/oodeval``:

1. A folder per task, ``<task>/requirement.md`` (or ``requirement.txt``) plus ``<task>/reference.puml`` (the reference
   class diagram, ``@startuml`` ... ``@enduml``), and optionally ``<task>/task.yaml`` with ``title``, ``domain``,
   ``difficulty`` (int) and ``labels`` (mapping).
2. JSON Lines files ``*.jsonl``, one task per line:
   ``{"id": "library", "requirement": "...", "reference_plantuml": "@startuml ...", "title": ..., "domain": ...,
   "difficulty": ..., "labels": {...}}`` (only ``id``, ``requirement`` and ``reference_plantuml`` are required).

Task ids are ``oodeval/<task>`` (folder name or ``id``); an id defined twice is an error.

>>> [t.id for t in load(Path("tests/fixtures/oodeval"))]
['oodeval/library', ...]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sysmo.benchmarks.paths import dataset_file, read_dataset_text
from sysmo.benchmarks.yaml_load import safe_load
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task, TaskInputs, TaskKind, TaskReferences
from sysmo.errors import TaskError
from sysmo.log import get_logger

FAMILY = "oodeval"
REQUIREMENT_FILES = ("requirement.md", "requirement.txt")
REFERENCE_FILE = "reference.puml"
META_FILE = "task.yaml"
log = get_logger(__name__)


class OODEvalRecord(BaseModel):
    """One OODEval task as stored on disk (either form)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    requirement: str
    reference_plantuml: str
    title: str = ""
    domain: str | None = None
    difficulty: int | None = None
    labels: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        if not value or "/" in value or value != value.strip():
            raise ValueError("id must be a non-empty name without '/' or surrounding spaces")
        return value

    @field_validator("requirement", "reference_plantuml")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    def to_task(self, origin: str) -> Task:
        return Task(
            id=f"{FAMILY}/{self.id}",
            benchmark=FAMILY,
            kind=TaskKind.UML_CLASS,
            title=self.title or self.id,
            inputs=TaskInputs(requirement=self.requirement.strip()),
            references=TaskReferences(
                model=Artifact(language=Language.PLANTUML, files={f"{self.id}.puml": self.reference_plantuml})
            ),
            domain=self.domain,
            difficulty=self.difficulty,
            labels={**self.labels, "origin": origin},
        )


def _record_from_folder(folder: Path, root: Path) -> OODEvalRecord | None:
    requirement = next((folder / n for n in REQUIREMENT_FILES if (folder / n).is_file()), None)
    reference = folder / REFERENCE_FILE
    if requirement is None and not reference.is_file():
        return None  # not a task folder
    if requirement is None or not reference.is_file():
        raise TaskError(
            f"oodeval task folder {folder} needs both {' or '.join(REQUIREMENT_FILES)} and {REFERENCE_FILE}"
        )
    dataset_file(root, folder, task=folder.name)
    meta: dict[str, Any] = {}
    if (folder / META_FILE).is_file():
        try:
            meta = safe_load(read_dataset_text(root, folder / META_FILE, task=folder.name)) or {}
        except yaml.YAMLError as exc:
            raise TaskError(f"{folder / META_FILE} is not valid YAML: {exc}") from exc
    try:
        return OODEvalRecord(
            id=folder.name,
            requirement=read_dataset_text(root, requirement, task=folder.name),
            reference_plantuml=read_dataset_text(root, reference, task=folder.name),
            **meta,
        )
    except (ValidationError, TypeError) as exc:
        raise TaskError(f"oodeval task folder {folder} is invalid: {exc}") from exc


def _records_from_jsonl(path: Path, root: Path) -> list[OODEvalRecord]:
    records = []
    for n, line in enumerate(read_dataset_text(root, path, task=path.name).splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(OODEvalRecord(**json.loads(line)))
        except json.JSONDecodeError as exc:
            raise TaskError(f"{path}:{n} is not valid JSON: {exc}") from exc
        except (ValidationError, TypeError) as exc:
            raise TaskError(f"{path}:{n} is not an OODEval task (need id, requirement, reference_plantuml): {exc}") from exc
    return records


def load(root: Path) -> list[Task]:
    """All tasks under ``root`` (task folders and ``*.jsonl`` files), sorted by id."""
    tasks: dict[str, Task] = {}
    sources: list[tuple[str, OODEvalRecord]] = []
    for entry in sorted(root.iterdir()):
        if entry.is_dir():
            record = _record_from_folder(entry, root)
            if record is not None:
                sources.append((str(entry.relative_to(root)), record))
        elif entry.suffix == ".jsonl":
            sources += [(entry.name, r) for r in _records_from_jsonl(entry, root)]
    for origin, record in sources:
        task = record.to_task(origin)
        if task.id in tasks:
            raise TaskError(f"oodeval task id {record.id!r} is defined twice ({tasks[task.id].labels['origin']} and {origin})")
        tasks[task.id] = task
    log.debug("oodeval.loaded", n=len(tasks), root=str(root))
    return [tasks[k] for k in sorted(tasks)]
