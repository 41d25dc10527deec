"""Files on disk to artifacts, and their verdicts, for ``sysmo check``.

A path's suffix names its language: ``.tla`` (with the ``.cfg`` of the same name beside it, and the sibling
modules it EXTENDS or INSTANCEs), ``.sysml``, ``.puml`` / ``.plantuml`` / ``.pu`` / ``.wsd``. A ``.cfg``
given alone means the ``.tla`` of the same name. Each file gets the check an agent's repair loop runs
(``sysmo.tools.checkers.check_artifact``); with a task, ``sysmo.evals.score_files.score_path`` runs the task's
whole scoring cascade instead. A verdict is passed, failed, or inconclusive (a check did not finish within its
bound: neither a pass nor a fail); ``verdict_of`` gives the exit code (docs/tla-verdicts.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact, Language
from sysmo.errors import ConfigError
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome

EXIT_PASSED = 0  # every file passes
EXIT_FAILED = 1  # a file fails (its tool rejects it, or a stage fails)
EXIT_USAGE = 2  # a usage error (no file, an unknown option, stage or task)
EXIT_INCONCLUSIVE = 3  # no file fails, but a check of one did not finish within its bound (time, states, memory)
INCONCLUSIVE = "inconclusive"
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

    @property
    def inconclusive(self) -> bool:
        """Neither passed nor failed: a check did not finish within its bound."""
        return not self.passed and self.outcome == INCONCLUSIVE

    def as_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"diagnostics"})
        data["diagnostics"] = [
            {"tool": d.tool, "severity": d.severity.value, "file": d.file, "line": d.line, "column": d.column,
             "code": d.code, "message": d.message}
            for d in self.diagnostics
        ]
        return data


def verdict_of(verdicts: list[FileVerdict]) -> tuple[str, int]:
    """The files' joint verdict and ``sysmo check``'s exit code: ``failed`` (1) if one fails, else
    ``inconclusive`` (3) if one did not finish, else ``passed`` (0)."""
    if any(not v.passed and not v.inconclusive for v in verdicts):
        return "failed", EXIT_FAILED
    if any(v.inconclusive for v in verdicts):
        return INCONCLUSIVE, EXIT_INCONCLUSIVE
    return "passed", EXIT_PASSED


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
