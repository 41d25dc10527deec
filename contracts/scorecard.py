"""``StageResult`` and ``ScoreCard``: the graded outcome of one artifact, stage by stage."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class StageResult(BaseModel):
    """One stage of a cascade. ``value`` in [0, 1] is the stage's headline score; ``metrics`` holds the rest."""

    stage: str
    value: float = 0.0
    passed: bool = False
    outcome: str = "ok"  # ok | failed | inconclusive | error | skipped
    metrics: dict[str, float | None] = Field(default_factory=dict)
    detail: dict[str, Any] = Field(default_factory=dict)
    skipped_because: str | None = None
    provenance: dict[str, str] = Field(default_factory=dict)  # tool versions, judge model, embedding model
    duration_s: float = 0.0

    @property
    def scored(self) -> bool:
        """Whether the stage has a value: a stage skipped for want of a judge, helper or traces has none (shown
        as "—", left out of means), unlike one gated by an earlier stage's failure (which scores 0)."""
        return not (self.outcome == "skipped" and not self.detail.get("gated"))


class ScoreCard(BaseModel):
    """Ordered stage results for one attempt's artifact."""

    task_id: str
    cascade: str
    mode: str | None = None  # the scoring mode ("sysmo" or "harness"); None on cards made before modes existed
    stages: list[StageResult] = Field(default_factory=list)

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.stage == name), None)

    def metric(self, name: str) -> float | None:
        """``stage`` (its value) or ``stage.metric``; None if absent."""
        stage_name, _, metric = name.partition(".")
        stage = self.stage(stage_name)
        if stage is None:
            return None
        return stage.value if not metric else stage.metrics.get(metric)

    def flat(self) -> dict[str, float | None]:
        """Every number on the card as ``stage`` / ``stage.metric`` keys (for tables and CSV)."""
        out: dict[str, float | None] = {}
        for s in self.stages:
            applicable = s.scored  # not applicable: None; a gated skip: 0
            out[s.stage] = s.value if applicable else None
            for k, v in s.metrics.items():
                out[f"{s.stage}.{k}"] = v if applicable else None
        return out
