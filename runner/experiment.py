"""``run_experiment``: agents x models x tasks x samples x arms, run by an executor, scored, stored, resumable.

It prepares the run (models and servers checked, tasks selected, work units expanded, the experiment record
written, finished units skipped), builds the ``RunState`` every executor shares (budget caps, stop handling,
store writes, summary, progress) and hands the pending units to the local or the Ray executor. A work unit's
attempt id is a hash of (experiment, task, agent, model, sample, and how its arm differs from the first arm), so
a resumed run recognises finished work and never recomputes it (docs/ablations.md).

>>> summary = run_experiment(ExperimentConfig.control())
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from sysmo.errors import STORAGE_HINT, ConfigError, StorageError, SysmoError, storage_problem
from sysmo.experiment_lock import experiment_lock
from sysmo.llm.endpoint import check_reachable
from sysmo.log import get_logger
from sysmo.runner.budget import Spending, StopControl
from sysmo.runner.collector import fewer_collections
from sysmo.runner.config import ExperimentConfig
from sysmo.runner.executor import AttemptObserver, Executor, RunState
from sysmo.graphs.live import LIVE_DIR
from sysmo.runner.progress import RunProgress
from sysmo.runner.results import ResultWriter, quick_turns
from sysmo.runner.summary import RunSummary, skipped_lines
from sysmo.runner.unit_runner import UnitRunner
from sysmo.runner.units import environment_record, expand, load_selected_tasks, missing_inputs
from sysmo.store import Store, StoreError

log = get_logger(__name__)


def executor_for(config: ExperimentConfig) -> Executor:
    """The executor ``config.executor`` names."""
    if config.executor == "ray":
        from sysmo.runner.ray_executor import RayExecutor

        return RayExecutor()
    if config.process_count() > 1:
        from sysmo.runner.process_executor import ProcessExecutor

        return ProcessExecutor()
    from sysmo.runner.local_executor import LocalExecutor

    return LocalExecutor()


def run_experiment(config: ExperimentConfig, *, progress: bool = True, resume: bool = False,
                   stop_event: threading.Event | None = None,
                   observers: Sequence[AttemptObserver] = ()) -> RunSummary:
    """Run (or resume) an experiment; finished units are skipped. Returns a summary of this invocation.
    ``observers`` are told of each attempt once it is stored and scored (``RunState.finished``).

    One process at a time per experiment id (``experiment_lock``): a second run on the same id is refused."""
    from sysmo.tools.tla import run_cache

    experiment_id = config.experiment_id()
    # the same deterministic SANY/TLC run (a spec checked again: by another sample, agent or the scoring) is
    # served from a content-addressed cache instead of a JVM: same output (tools.tla.run_cache)
    with experiment_lock(config.output_dir, experiment_id), run_cache.for_run():
        return _run_experiment(config, experiment_id, progress=progress, resume=resume, stop_event=stop_event,
                               observers=observers)


def _check_models(config: ExperimentConfig, runner: UnitRunner) -> dict[str, str]:
    """Unknown models, missing API keys and dead servers stop the run before any work, and so does a cost cap
    on a model without a known price (its spend would count as $0, so the cap could never stop it). Returns
    the unpriced models, each with why (the experiment record keeps them; the summary notes them)."""
    unpriced: dict[str, str] = {}
    for model in config.model_names:
        try:
            unpriced.update(runner.client(model).unpriced())
        except SysmoError as exc:
            raise ConfigError(f"model {model!r} cannot be used: {exc}") from exc
    for entry in config.models:  # a dead --api-base stops the run now, not after retries
        api_base = entry.get("api_base") if isinstance(entry, dict) else getattr(entry, "api_base", None)
        if api_base:
            check_reachable(api_base)
    cap = config.budget.max_cost_usd
    if unpriced and cap is not None:
        raise ConfigError(
            f"--max-cost {cap:g} cannot be kept: {'; '.join(unpriced.values())}; or cap the run with "
            "--max-total-tokens")
    for why in unpriced.values():
        log.warning("experiment.unpriced_model", note=why)
    return unpriced


def _run_experiment(config: ExperimentConfig, experiment_id: str, *, progress: bool, resume: bool,
                    stop_event: threading.Event | None, observers: Sequence[AttemptObserver] = ()) -> RunSummary:
    started = time.monotonic()
    directory = config.output_dir / experiment_id
    if not resume and (directory / "results.sqlite").exists():
        raise SysmoError(f"experiment {experiment_id} already exists in {directory}; resume it with "
                         f"`sysmo run --resume {experiment_id}` or choose another --id")
    if not resume and directory.is_dir() and any(directory.iterdir()):
        # its store is gone but its files are not: running would redo (and pay for) everything without a word
        raise StoreError(f"experiment folder {directory} exists but has no results.sqlite (deleted or moved?); "
                         f"put the store back and `sysmo run --resume {experiment_id}`, or start over by removing "
                         f"the folder (rm -r {directory}), or choose another --id")
    if resume:
        Store.check_resumable(directory / "results.sqlite", experiment_id)
    runner = UnitRunner(config, directory)
    unpriced = _check_models(config, runner)
    executor = executor_for(config)
    executor.start(config, directory)  # Ray's workers start while the run is prepared
    try:
        return _prepare_and_run(config, experiment_id, directory, runner, executor, started, unpriced,
                                progress=progress, resume=resume, stop_event=stop_event, observers=observers)
    except Exception as exc:
        problem = storage_problem(exc)
        if problem is None:
            raise
        raise StorageError(disk_failed(problem, config, experiment_id, directory)) from exc
    finally:
        executor.close()


def disk_failed(problem: str, config: ExperimentConfig, experiment_id: str, directory: Path) -> str:
    """The one line a run ends with when its disk fills or turns read-only: what happened, what is kept, how to go
    on (the attempts committed before it are on record; resume runs the rest)."""
    problem = problem.split(f"; {STORAGE_HINT}")[0]
    stored = Store.count_attempts(directory / "results.sqlite", experiment_id)
    kept = f"the {stored} attempt(s) stored before it are kept" if stored is not None else "what was stored is kept"
    return (f"{problem}; {kept}: free some space or make the folder writable, then "
            f"`sysmo run --resume {experiment_id} -o {config.output_dir}`")


def _prepare_and_run(config: ExperimentConfig, experiment_id: str, directory: Path, runner: UnitRunner,
                     executor: Executor, started: float, unpriced: dict[str, str], *, progress: bool, resume: bool,
                     stop_event: threading.Event | None, observers: Sequence[AttemptObserver] = ()) -> RunSummary:
    # unknown agents, an empty task selection: stop before the experiment exists (its id stays free)
    tasks = load_selected_tasks(config)
    units, unsupported = expand(config, tasks, experiment_id)
    if not units:
        raise ConfigError("nothing to run: " + "\n".join(skipped_lines(unsupported)))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    store = Store(directory / "results.sqlite")
    # the models whose spend counts as $0 are part of the record: the report and `sysmo view` say so beside costs
    environment = {**environment_record(), "unpriced_models": sorted(unpriced),
                   "planned_attempts": len(units)}  # `sysmo view` shows done of planned while it runs
    store.save_experiment(experiment_id, config.model_dump(mode="json"), environment, config.is_control)
    done = store.scored_attempt_ids(experiment_id) if config.score else store.finished_attempt_ids(experiment_id)
    pending = [u for u in units if u.attempt_id not in done]
    summary = RunSummary(experiment_id=experiment_id, directory=directory, planned=len(units),
                         skipped_done=len(units) - len(pending), unsupported=unsupported,
                         missing_inputs=missing_inputs(units), cost_notes=list(unpriced.values()))
    for note in summary.missing_inputs:
        log.warning("experiment.missing_input", note=note)
    log.info("experiment.start", id=experiment_id, units=len(units), pending=len(pending), control=config.is_control,
             kind=config.kind, executor=config.executor, processes=config.process_count())
    spending = Spending.of_experiment(store, experiment_id)  # caps count earlier runs too
    stop = StopControl(stop_event)
    # the run's one writer of results.sqlite and checkpoints.sqlite; on a one-process local run it waits for a
    # tool check before a batch (on Ray and with worker processes the tools run in the workers)
    writer = ResultWriter(runner, store, experiment_id, spending, summary,
                          wait_for_tools=config.executor == "local" and config.process_count() == 1)
    try:
        with RunProgress(total=len(units), done=summary.skipped_done, enabled=progress,
                         label=f"{experiment_id}{f' [{config.label}]' if config.label else ''}") as bar:
            state = RunState(config=config, runner=runner, summary=summary, spending=spending, stop=stop, bar=bar,
                             writer=writer, attempted=store.finished_attempt_ids(experiment_id),
                             observers=list(observers))
            with stop.on_ctrl_c(bar.note), quick_turns(), fewer_collections():
                executor.run(pending, state)
            state.finish()
        store.set_experiment_status(experiment_id, "stopped" if summary.stopped else "finished")
    finally:
        writer.close()  # what was handed to it is written (also after an abort)
        runner.close()
        # the run is over: no attempt of it runs now (an attempt that raised left its file of rounds so far)
        shutil.rmtree(directory / LIVE_DIR, ignore_errors=True)
        summary.seconds = time.monotonic() - started
        store.close()
    return summary
