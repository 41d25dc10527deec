"""``--executor ray``: the same work units on a Ray cluster; results still written through the store by the driver.

Workers run ``UnitRunner`` (attempt + score) and send back JSON; only the driver touches the SQLite store, so
a resumed run sees exactly the same state as with the local executor. Checkpoints and artifact files are
written by the workers under the experiment directory (shared on a local cluster; on a remote cluster
they stay on the worker, while everything needed for reports and traces comes back to the store).
"""

from __future__ import annotations

import time
from typing import Any

from sysmo.contracts.events import EventAdapter
from sysmo.errors import ConfigError
from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.contracts.scorecard import ScoreCard
from sysmo.log import get_logger

log = get_logger(__name__)


def _run_unit_payload(config_json: str, directory: str, task_json: str, agent: str, model: str,
                      sample: int) -> tuple[str, str | None]:
    """Executed on a Ray worker: one attempt and its score, as JSON."""
    from pathlib import Path

    from sysmo.contracts.task import Task
    from sysmo.runner import ExperimentConfig, UnitRunner, WorkUnit

    config = ExperimentConfig.model_validate_json(config_json)
    unit = WorkUnit(Task.model_validate_json(task_json), agent, model, sample, Path(directory).name)
    runner = UnitRunner(config, Path(directory))
    try:
        attempt = runner.run_attempt(unit)
        runner.write_artifacts(attempt)
        card, score_events = runner.score_with_events(unit, attempt) if config.score else (None, [])
    finally:
        runner.close()
    events = [e.model_dump_json() for e in attempt.events], [e.model_dump_json() for e in score_events]
    return attempt.model_dump_json(), card.model_dump_json() if card else None, events


def run_on_ray(config, pending: list, summary, store, started: float):
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("--executor ray needs Ray: pip install 'sysmo[ray]' (ray==2.60.0)") from exc
    from sysmo.runner import task_meta

    if not ray.is_initialized():
        ray.init(address=config.ray_address, include_dashboard=False, log_to_driver=False,
                 ignore_reinit_error=True, num_cpus=None if config.ray_address else config.concurrency)
    remote = ray.remote(num_cpus=1, max_retries=1)(_run_unit_payload)
    config_json = config.model_dump_json()
    directory = str(summary.directory)
    refs: dict[Any, Any] = {}
    for unit in pending:
        ref = remote.remote(config_json, directory, unit.task.model_dump_json(), unit.agent, unit.model, unit.sample)
        refs[ref] = unit
    log.info("ray.submitted", units=len(refs), address=config.ray_address or "local")
    remaining = list(refs)
    try:
        while remaining:
            done, remaining = ray.wait(remaining, num_returns=1)
            for ref in done:
                unit = refs[ref]
                try:
                    attempt_json, card_json, (attempt_events, score_events) = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a worker failure is recorded, the run goes on
                    summary.errors += 1
                    log.warning("ray.unit_failed", unit=unit.attempt_id, error=str(exc))
                    continue
                attempt = Attempt.model_validate_json(attempt_json)
                attempt.events = [EventAdapter.validate_json(e) for e in attempt_events]
                store.save_attempt(summary.experiment_id, attempt, task_meta(unit.task))
                if card_json:
                    store.save_score(summary.experiment_id, attempt.id, ScoreCard.model_validate_json(card_json),
                                     [EventAdapter.validate_json(e) for e in score_events])
                summary.ran += 1
                summary.cost_usd += attempt.spend_usd
                summary.tokens += attempt.prompt_tokens + attempt.completion_tokens
                summary.passed += attempt.status == AttemptStatus.PASSED
                summary.errors += attempt.status == AttemptStatus.ERROR
    except KeyboardInterrupt:
        for ref in remaining:
            ray.cancel(ref, force=True)
        summary.stopped = "interrupted"
    store.set_experiment_status(summary.experiment_id, "stopped" if summary.stopped else "finished")
    summary.seconds = time.monotonic() - started
    store.close()
    return summary
