"""``sysmo check --task``: a file on disk scored by the task's cascade, as a ``FileVerdict`` with the failing
stages' diagnostics (the in-loop check without a task is ``sysmo.tools.check_files.check_path``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sysmo.contracts.check import Diagnostic
from sysmo.contracts.scorecard import ScoreCard
from sysmo.contracts.task import Task
from sysmo.errors import ConfigError
from sysmo.evals.cascade import DEFAULT_SCORING_MODE, Cascade, ScoringContext, cascade_for
from sysmo.tools.check_files import FileVerdict, artifact_of


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
        if stage.detail.get("unplaced"):  # conformance: trace names the mapping could not place count against it
            why += f"; the trace mapping could not place {', '.join(stage.detail['unplaced'])}"
        found.append(Diagnostic(tool=stage.stage, code=stage.outcome,
                                message=f"{stage.stage} {stage.outcome}: {why}"))
    return found


def score_path(path: Path, task: Task, stages: list[str] | None = None, mode: str = DEFAULT_SCORING_MODE) -> FileVerdict:
    """The task's scoring cascade on one file in scoring ``mode``, ``stages`` only (the earlier ones still run:
    they gate)."""
    artifact = artifact_of(path)
    if artifact.language != task.language:
        raise ConfigError(
            f"{path}: a {artifact.language.value} file, but {task.id} wants {task.language.value}")
    cascade = cascade_for(task.kind)
    if stages is not None:
        names = [s.name for s in cascade.stages]
        last = max(names.index(s) for s in stages)
        cascade = Cascade(name=cascade.name, stages=cascade.stages[: last + 1])
    card: ScoreCard = cascade.score(artifact, task, ScoringContext(options={"mode": mode}))
    shown = [s for s in card.stages if stages is None or s.stage in stages]
    rows = [s.model_dump(mode="json") for s in shown]
    failing = [s for s, row in zip(shown, rows, strict=True) if not stage_passed(row)]
    diagnostics = [d for s in failing for d in _stage_diagnostics(s)]
    passed = not failing
    return FileVerdict(path=str(path), language=artifact.language, passed=passed, outcome=_worst(failing),
                       tool=f"cascade:{card.cascade}", diagnostics=diagnostics, stages=rows)


def _worst(failing: list[Any]) -> str:
    """The file's outcome from its failing stages: ``inconclusive`` when every one that decided (not gated by
    another) is inconclusive, else the first decisive one's outcome (``failed`` for a stage that ran clean but
    did not pass, e.g. a runtime stage that covered nothing)."""
    if not failing:
        return "ok"
    decisive = [s for s in failing if not (s.outcome == "skipped" and s.detail.get("gated"))] or failing
    if all(s.outcome == "inconclusive" for s in decisive):
        return "inconclusive"
    first = next(s for s in decisive if s.outcome != "inconclusive")
    return "failed" if first.outcome == "ok" else first.outcome

