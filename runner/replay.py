"""``sysmo replay ATTEMPT``: run a stored attempt's graph again with no model calls and check it is the same.

Every model call is answered from the attempt's recorded events (``llm.recorded.RecordedProvider``: by request
hash, in order; a request that was not recorded stops the replay with an error naming it). The tools run for
real, the attempt is re-scored (its helper/judge calls answered from the record too), and the artifacts,
statuses and scores are compared with the stored ones.

>>> result = replay_attempt(store, attempt)
>>> result.identical, result.differences, result.model_calls_answered
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sysmo.errors import SysmoError
from sysmo.contracts.scorecard import ScoreCard
from sysmo.contracts.attempt import Attempt
from sysmo.log import get_logger

log = get_logger(__name__)


class ReplayResult(BaseModel):
    attempt_id: str
    experiment_id: str
    identical: bool
    differences: list[str] = Field(default_factory=list)
    model_calls_recorded: int = 0  # replies in the record
    model_calls_answered: int = 0  # answered from it during the replay
    live_model_calls: int = 0  # calls that reached a real provider: always 0
    rounds: int = 0
    status: str = ""
    stored_status: str = ""
    score_compared: bool = False


def _artifact_hashes(attempt: Attempt) -> list[str | None]:
    return [r.artifact.sha256 if r.artifact else None for r in attempt.rounds]


def _card_values(card: ScoreCard) -> dict[str, Any]:
    """What must be equal between two scorings: each stage's verdict and numbers (not its timing)."""
    return {s.stage: (s.outcome, round(s.value, 9), s.passed, {k: v for k, v in s.metrics.items()},
                      s.skipped_because) for s in card.stages}


def compare(stored: Attempt, replayed: Attempt, stored_card: ScoreCard | None,
            replayed_card: ScoreCard | None) -> list[str]:
    differences = []
    if replayed.status != stored.status:
        differences.append(f"status {stored.status.value} -> {replayed.status.value}")
    before, after = _artifact_hashes(stored), _artifact_hashes(replayed)
    if len(before) != len(after):
        differences.append(f"rounds {len(before)} -> {len(after)}")
    for index, (a, b) in enumerate(zip(before, after)):
        if a != b:
            differences.append(f"round {index} artifact {str(a)[:12]} -> {str(b)[:12]}")
    for index, (a, b) in enumerate(zip(stored.rounds, replayed.rounds)):
        verdicts = [(r.check.outcome.value, len(r.check.diagnostics)) if r.check else None for r in (a, b)]
        if verdicts[0] != verdicts[1]:
            differences.append(f"round {index} check {verdicts[0]} -> {verdicts[1]}")
    final = [x.final_artifact.sha256 if x.final_artifact else None for x in (stored, replayed)]
    if final[0] != final[1]:
        differences.append(f"final artifact {str(final[0])[:12]} -> {str(final[1])[:12]}")
    if stored_card is not None and replayed_card is not None:
        old, new = _card_values(stored_card), _card_values(replayed_card)
        for stage in sorted(set(old) | set(new)):
            if old.get(stage) != new.get(stage):
                differences.append(f"score stage {stage}: {old.get(stage)} -> {new.get(stage)}")
    return differences


def replay_attempt(store: Any, attempt: Attempt, *, score: bool = True) -> ReplayResult:
    """Re-run ``attempt`` (read from ``store``) from its recorded events and compare (see the module doc)."""
    from sysmo.contracts.arms import Arm
    from sysmo.llm import LLM
    from sysmo.llm.recorded import RecordedProvider
    from sysmo.runner.config import ExperimentConfig
    from sysmo.runner.unit_runner import UnitRunner
    from sysmo.runner.units import WorkUnit, load_selected_tasks

    experiment_id = store.query("SELECT experiment_id FROM attempts WHERE id=?", (attempt.id,))[0]["experiment_id"]
    events = attempt.events or store.events(attempt.id)
    if not any(getattr(e, "type", "") == "llm_call" for e in events):
        raise SysmoError(f"attempt {attempt.id} has no recorded model calls (stored before events were kept?): "
                         "it cannot be replayed")
    config = ExperimentConfig.model_validate(store.experiment(experiment_id)["config"])
    config = config.model_copy(update={"checkpoints": "none", "concurrency": 1})
    task = next((t for t in load_selected_tasks(config) if t.id == attempt.task_id), None)
    if task is None:
        raise SysmoError(f"task {attempt.task_id} of attempt {attempt.id} is not in its experiment's selection any more")
    provider = RecordedProvider(events)

    class ReplayRunner(UnitRunner):
        def client(self, model: str) -> Any:
            with self._lock:
                if model not in self._clients:
                    self._clients[model] = LLM(self._role_configs(model), cache=False, provider=provider)
                return self._clients[model]

    with tempfile.TemporaryDirectory(prefix="sysmo-replay-") as scratch:
        runner = ReplayRunner(config, Path(scratch))
        # the attempt's own arm and seed (an attempt from before arms ran the experiment's only arm, no seed)
        base = config.arms()[0]
        arm = Arm.of(attempt.arm) if attempt.arm else base
        unit = WorkUnit(task, attempt.agent, attempt.model, attempt.sample_index, experiment_id, arm, arm.key(base),
                        attempt.seed)
        try:
            replayed, _ = asyncio.run(runner.arun_attempt(unit))
            stored_card = store.scorecard(attempt.id) if score else None
            replayed_card, score_events = None, []
            if stored_card is not None:
                replayed_card, score_events = runner.score_with_events(unit, replayed, store=None)
        finally:
            runner.close()
    differences = compare(attempt, replayed, stored_card, replayed_card)
    if unrecorded := [e for e in replayed.events if getattr(e, "error_type", None) == "UnrecordedRequestError"]:
        differences.insert(0, unrecorded[0].error or "a request was not recorded")
    answered = [e for e in [*replayed.events, *score_events] if getattr(e, "type", "") == "llm_call" and e.response]
    result = ReplayResult(
        attempt_id=attempt.id, experiment_id=experiment_id, identical=not differences, differences=differences,
        model_calls_recorded=provider.recorded, model_calls_answered=len(provider.answered),
        live_model_calls=len(answered) - len(provider.answered),
        rounds=len(replayed.rounds), status=replayed.status.value, stored_status=attempt.status.value,
        score_compared=stored_card is not None)
    log.info("replay.done", attempt=attempt.id, identical=result.identical, answered=result.model_calls_answered)
    return result
