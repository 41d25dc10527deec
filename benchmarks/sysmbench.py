"""Loader for SysMBench (natural-language requirements -> SysML v2 textual model) from ``sysmbench.jsonl``.

Task ids are ``sysmbench/<id>`` where ``id`` is the upstream sample folder number (1..151). Upstream
``dataset.json`` (and every published prediction/result list) is ordered by folder name *as a string*, so its
position ``json_index`` is not ``id - 1``; it is kept in ``labels["json_index"]`` for pairing with published outputs.
Reference validity under OpenSysML (``reference_validation_opensysml.jsonl``) goes to ``labels["reference_valid"]``.

>>> task = next(t for t in load(Path("/data/sysmbench")) if t.id == "sysmbench/1")
>>> task.labels["json_index"], task.difficulty
(0, 1)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from sysmo.benchmarks.paths import read_dataset_text
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task, TaskInputs, TaskKind, TaskReferences
from sysmo.errors import DataMissingError, TaskError
from sysmo.log import get_logger

FAMILY = "sysmbench"
JSONL = "sysmbench.jsonl"
VALIDATION_JSONL = "reference_validation_opensysml.jsonl"
log = get_logger(__name__)


class SysMBenchRow(BaseModel):
    """One line of ``sysmbench.jsonl`` (fields described in the dataset's README.txt)."""

    model_config = ConfigDict(extra="allow")
    id: int
    sample_dir: str
    json_index: int
    requirement: str
    reference_model: str
    domain: str
    key_grammar: str | list[str]
    difficulty: int
    loc: int | None = None
    requirement_zh: str | None = None
    diagram: str | None = None
    reference_sha256: str | None = None


class ReferenceValidation(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: int
    valid: bool
    n_errors: int = 0
    n_warnings: int = 0
    diagnostics: str = ""


def _jsonl(path: Path, root: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(read_dataset_text(root, path, task=path.name).splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise TaskError(f"{path}:{n} is not valid JSON: {exc}") from exc
    return rows


def _title(requirement: str, limit: int = 80) -> str:
    first = requirement.strip().split(". ")[0].strip()
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def load(root: Path) -> list[Task]:
    """All tasks of ``root/sysmbench.jsonl``, sorted by id."""
    path = root / JSONL
    if not path.is_file():
        raise DataMissingError(f"sysmbench: {path} not found")
    validation: dict[int, ReferenceValidation] = {}
    if (root / VALIDATION_JSONL).is_file():
        validation = {v.id: v for v in (ReferenceValidation(**r) for r in _jsonl(root / VALIDATION_JSONL, root))}
    tasks = []
    for raw in _jsonl(path, root):
        try:
            row = SysMBenchRow(**raw)
        except ValidationError as exc:
            raise TaskError(f"{path}: line for id {raw.get('id')!r} is malformed: {exc}") from exc
        grammar = [row.key_grammar] if isinstance(row.key_grammar, str) else list(row.key_grammar)
        labels: dict[str, Any] = {
            "json_index": row.json_index,
            "sample_dir": row.sample_dir,
            "loc": row.loc,
            "requirement_zh": row.requirement_zh,
            "reference_sha256": row.reference_sha256,
        }
        if row.diagram:
            labels["diagram"] = str(root / row.diagram)
        check = validation.get(row.id)
        if check is not None:
            labels.update(
                reference_valid=check.valid,
                reference_n_errors=check.n_errors,
                reference_diagnostics=check.diagnostics,
            )
        tasks.append(
            Task(
                id=f"{FAMILY}/{row.id}",
                benchmark=FAMILY,
                kind=TaskKind.SYSML,
                title=_title(row.requirement),
                inputs=TaskInputs(requirement=row.requirement),
                references=TaskReferences(model=Artifact(language=Language.SYSML, files={"design.sysml": row.reference_model})),
                domain=row.domain,
                difficulty=row.difficulty,
                key_grammar=grammar,
                labels=labels,
            )
        )
    tasks.sort(key=lambda t: int(t.id.rsplit("/", 1)[1]))
    log.debug("sysmbench.loaded", n=len(tasks), validated=len(validation))
    return tasks


def sample_folder(root: Path, task: Task) -> Path:
    """The upstream per-sample folder of a task (``samples/001`` style, as named in the ``diagram`` field)."""
    diagram = task.labels.get("diagram")
    if diagram:
        return Path(diagram).parent
    return root / "samples" / f"{int(task.id.rsplit('/', 1)[1]):03d}"
