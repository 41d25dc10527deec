"""Files on disk to artifacts, and their verdicts, for ``sysmo check``.

A path's suffix names its language: ``.tla`` (with the ``.cfg`` of the same name beside it, and the sibling
modules it EXTENDS or INSTANCEs), ``.sysml``, ``.puml`` / ``.plantuml`` / ``.pu`` / ``.wsd``. A ``.cfg``
given alone means the ``.tla`` of the same name. Each file gets the check an agent's repair loop runs
(``sysmo.tools.checkers.check_artifact``), or with a task the task's whole scoring cascade.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task
from sysmo.errors import ConfigError
from sysmo.contracts.scorecard import ScoreCard
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome

SUFFIXES = {".tla": Language.TLA, ".cfg": Language.TLA, ".sysml": Language.SYSML, ".puml": Language.PLANTUML,
            ".plantuml": Language.PLANTUML, ".pu": Language.PLANTUML, ".wsd": Language.PLANTUML}
REFERENCED = re.compile(r"\b(?:EXTENDS|INSTANCE)\b([^\n]*)")


class FileVerdict(BaseModel):
    """One checked path: passed or not, the tool's outcome and every diagnostic; with a task, the stages."""

    path: str
    language: Language
    passed: bool
    outcome: str
    tool: str
    tool_version: str = ""
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    stages: list[dict[str, Any]] = Field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"diagnostics"})
        data["diagnostics"] = [
            {"tool": d.tool, "severity": d.severity.value, "file": d.file, "line": d.line, "column": d.column,
             "code": d.code, "message": d.message}
            for d in self.diagnostics
        ]
        return data


def language_of(path: Path) -> Language:
    language = SUFFIXES.get(path.suffix.lower())
    if language is None:
        known = ", ".join(sorted(SUFFIXES))
        raise ConfigError(f"{path}: unknown kind of file (known: {known})")
    return language


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc})") from exc


def _tla_files(path: Path) -> dict[str, str]:
    """The module, its cfg and the sibling modules it references (transitively)."""
    files = {path.name: _read(path)}
    cfg = path.with_suffix(".cfg")
    if cfg.is_file():
        files[cfg.name] = _read(cfg)
    pending = [files[path.name]]
    while pending:
        text = pending.pop()
        for names in REFERENCED.findall(text):
            for name in re.findall(r"\w+", names):
                sibling = path.parent / f"{name}.tla"
                if sibling.name not in files and sibling.is_file():
                    files[sibling.name] = _read(sibling)
                    pending.append(files[sibling.name])
    return files


def artifact_of(path: Path) -> Artifact:
    """The artifact ``path`` stands for (see the module doc)."""
    language = language_of(path)
    if language == Language.TLA:
        return Artifact(language=language, files=_tla_files(path.with_suffix(".tla")))
    return Artifact(language=language, files={path.name: _read(path)})


def _with_file(result: CheckResult, default: str) -> list[Diagnostic]:
    return [d if d.file or d.line is None else d.model_copy(update={"file": default})
            for d in result.diagnostics]


def check_path(path: Path) -> FileVerdict:
    """The in-loop check of one file (what an agent sees between its rounds)."""
    from sysmo.tools.checkers import check_artifact

    artifact = artifact_of(path)
    result = check_artifact(artifact)
    return FileVerdict(path=str(path), language=artifact.language, passed=result.outcome == Outcome.OK,
                       outcome=result.outcome.value, tool=result.tool, tool_version=result.tool_version,
                       diagnostics=_with_file(result, artifact.main_file or path.name))


def stage_passed(stage: dict[str, Any]) -> bool:
    """A stage passes when it passed, or was skipped for what the task lacks (not blocked by a gate)."""
    if stage["outcome"] == "skipped":
        return not stage.get("detail", {}).get("gated", False)
    return bool(stage["passed"])


RENDERED = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+)(?::(?P<column>\d+))?: (?P<severity>\w+)"
                      r"(?:\[(?P<code>[^\]]+)\])?: (?P<message>.*)$", re.DOTALL)


def _stage_diagnostics(stage: Any) -> list[Diagnostic]:
    """A failing stage's diagnostics (parsed back from their rendered lines), or one line saying why."""
    found = []
    for text in stage.detail.get("diagnostics") or []:
        match = RENDERED.match(str(text))
        if match and match["severity"] in ("error", "warning", "typing", "info"):
            found.append(Diagnostic(tool=stage.stage, severity=match["severity"], file=match["file"],
                                    line=int(match["line"]),
                                    column=int(match["column"]) if match["column"] else None,
                                    code=match["code"], message=match["message"]))
        else:
            found.append(Diagnostic(tool=stage.stage, message=str(text)))
    if not found:
        why = stage.skipped_because or stage.detail.get("error") or f"value {stage.value:.3f}"
        found.append(Diagnostic(tool=stage.stage, code=stage.outcome,
                                message=f"{stage.stage} {stage.outcome}: {why}"))
    return found


def score_path(path: Path, task: Task, stages: list[str] | None = None) -> FileVerdict:
    """The task's scoring cascade on one file, ``stages`` only (the earlier ones still run: they gate)."""
    from sysmo.evals.cascade import Cascade, ScoringContext, cascade_for

    artifact = artifact_of(path)
    if artifact.language != task.language:
        raise ConfigError(
            f"{path}: a {artifact.language.value} file, but {task.id} wants {task.language.value}")
    cascade = cascade_for(task.kind)
    if stages is not None:
        names = [s.name for s in cascade.stages]
        last = max(names.index(s) for s in stages)
        cascade = Cascade(name=cascade.name, stages=cascade.stages[: last + 1])
    card: ScoreCard = cascade.score(artifact, task, ScoringContext())
    shown = [s for s in card.stages if stages is None or s.stage in stages]
    rows = [s.model_dump(mode="json") for s in shown]
    diagnostics = [d for s in shown if not stage_passed(s.model_dump(mode="json"))
                   for d in _stage_diagnostics(s)]
    passed = all(stage_passed(r) for r in rows)
    worst = next((s.outcome for s in shown if not stage_passed(s.model_dump(mode="json"))), "ok")
    return FileVerdict(path=str(path), language=artifact.language, passed=passed, outcome=worst,
                       tool=f"cascade:{card.cascade}", diagnostics=diagnostics, stages=rows)
