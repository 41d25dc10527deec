"""Reproductions through the standard pipeline: published outputs replayed by ``sysmo run``, then scored.

``replay_experiment`` runs ``replay/<source>:<model>`` models with the ``base_modeling`` agent on SysMBench
(one sample, no repair for single-answer sources; the CIL loops get their transcripts' rounds), stores every
attempt like any experiment, and returns the stored replies. The paper's metrics are then computed from those
attempt records: the replies are the published predictions verbatim (the paper scored the raw text, so the
reproduction reads the round's reply, not the artifact extracted from it), and the OpenSysML verdict of each
round is the attempt's own check.

The experiment lives in ``<output_dir>/<id>`` (default ``<settings().home>/reproduce``) and is resumed when run
again, so a second ``sysmo reproduce`` re-uses the stored attempts.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, Field
from sysmo.benchmarks.datadir import require_data_dir
from sysmo.log import get_logger

log = get_logger(__name__)


class ReplayedRound(BaseModel):
    response: str
    valid: bool | None = None  # our OpenSysML verdict on the round's model (None: nothing was checked)
    typing_only: bool = False  # rejected for OpenSysML's strict typing checks alone (other tools do not make them)


class ReplayedAttempt(BaseModel):
    attempt_id: str
    task_id: str
    status: str
    rounds: list[ReplayedRound] = Field(default_factory=list)

    @property
    def sample_id(self) -> int:
        return int(self.task_id.rsplit("/", 1)[1])


class ReplayedRun(BaseModel):
    """One replay model's attempts in a reproduction experiment."""

    experiment_id: str
    directory: Path
    model: str
    attempts: dict[int, ReplayedAttempt] = Field(default_factory=dict)  # by SysMBench sample id

    def replies(self) -> dict[int, str]:
        return {i: a.rounds[0].response for i, a in self.attempts.items() if a.rounds}


def default_output_dir() -> Path:
    from sysmo.config import settings

    return settings().home / "reproduce"


def replay_experiment(models: list[str], *, data_dir: Path | str | None = None, output_dir: Path | None = None,
                      max_rounds: int = 0, ids: list[str] | None = None, name: str = "reproduce",
                      concurrency: int = 4) -> dict[str, ReplayedRun]:
    """Run (or resume) the replay of ``models`` on SysMBench through ``run_experiment``; the stored attempts."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    data = require_data_dir(data_dir)
    digest = hashlib.sha256(repr((sorted(models), max_rounds, sorted(ids or []))).encode()).hexdigest()[:8]
    config = ExperimentConfig(
        id=f"{name}-{digest}", output_dir=output_dir or default_output_dir(), data_dir=data,
        agents=["base_modeling"], models=list(models), samples=1, max_rounds=max_rounds, score=False,
        checkpoints="none", concurrency=concurrency,
        tasks=TaskSelection(benchmarks=["sysmbench"], ids=ids or []),
    )
    directory = config.directory()
    # the replies' OpenSysML checks spread over a kernel per tool slot (one kernel answers one check at a time)
    from sysmo.tools.sysml.kernel import use_kernels

    use_kernels(config.tool_concurrency)
    summary = run_experiment(config, progress=False, resume=(directory / "results.sqlite").is_file())
    log.info("reproduce.replayed", experiment=summary.experiment_id, ran=summary.ran, done=summary.skipped_done)
    runs = {m: ReplayedRun(experiment_id=summary.experiment_id, directory=directory, model=m) for m in models}
    store = Store(directory / "results.sqlite")
    try:
        for attempt in store.attempts(summary.experiment_id):
            rounds = [ReplayedRound(response=r.response, valid=r.check.ok if r.check is not None else None,
                                    typing_only=bool(r.check is not None and r.check.details.get("typing_only")))
                      for r in attempt.rounds]
            replayed = ReplayedAttempt(attempt_id=attempt.id, task_id=attempt.task_id, status=attempt.status.value,
                                       rounds=rounds)
            runs[attempt.model].attempts[replayed.sample_id] = replayed
    finally:
        store.close()
    return runs
