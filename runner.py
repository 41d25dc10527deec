"""The experiment runner: agents x models x tasks x samples, run concurrently, scored, stored, resumable.

It is the only place that knows about scheduling. A work unit is (task, agent, model, sample); its
attempt id is a hash of those, so a resumed run recognises finished work and never recomputes it.

>>> summary = run_experiment(ExperimentConfig.control())
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import platform
import re
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sysmo.agents.registry import AGENT_NAMES as ALL_AGENTS
from sysmo.benchmarks.selection import TaskSelection
from sysmo.contracts.task import Task
from sysmo.errors import ConfigError, SysmoError, describe_invalid_settings
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.contracts.scorecard import ScoreCard
from sysmo.experiment_lock import experiment_lock
from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.llm.endpoint import check_reachable
from sysmo.log import get_logger
from sysmo.store import Store

if TYPE_CHECKING:  # langgraph's SQLite saver is imported when an experiment first keeps steps
    from sysmo.graphs.checkpoint import CheckpointStore, StepRecorder

log = get_logger(__name__)

CONTROL_MODELS = ["reference", "mockllm/control"]


class Budget(BaseModel):
    """Stop scheduling new attempts once spending passes a cap (finished work is kept)."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None


class ExperimentConfig(BaseModel):
    """One experiment. Every field has a default; a YAML file or CLI flags override them."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None  # default: derived from the date and the settings
    agents: list[str] = Field(default_factory=lambda: list(ALL_AGENTS))
    models: list[Any] = Field(default_factory=lambda: list(CONTROL_MODELS))  # generator models (str or RoleConfig dict)
    helper: Any = None  # helper role model (str or RoleConfig dict); default: none for controls
    judge: Any = None  # judge role model
    tasks: TaskSelection = Field(default_factory=lambda: TaskSelection(benchmarks=["starter"]))
    data_dir: Path | None = None
    sources_dir: Path | None = None  # checkouts of the modelled systems (SysMoBench), one folder per task
    samples: int = Field(default=5, ge=1)
    max_rounds: int = Field(default=3, ge=0)
    feedback: Literal["none", "bare", "diagnostics", "full"] = "diagnostics"  # repair feedback ablation
    strategy: Literal["zero-shot", "few-shot", "cot", "grammar"] | None = None  # prompting strategy (None: own)
    temperature: float | None = 0.2
    max_tokens: int | None = None
    seed: int = 0
    concurrency: int = Field(default=4, ge=1)  # attempts in flight (their LLM calls overlap)
    tool_concurrency: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1)
    budget: Budget = Field(default_factory=Budget)
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    output_dir: Path = Path("runs")
    score: bool = True
    scoring: dict[str, Any] = Field(default_factory=dict)  # per-stage options, e.g. {"runtime.runs": 5}
    selection_metric: dict[str, str] = Field(default_factory=dict)  # kind -> metric for best-of-n
    # "steps": LangGraph's checkpoint of every step of every attempt, in checkpoints.sqlite (list, fork);
    # "none": only the attempt records (results.sqlite), for the fastest runs
    checkpoints: Literal["steps", "none"] = "steps"

    @field_validator("agents", "models", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @classmethod
    def control(cls, **overrides: Any) -> ExperimentConfig:
        """The offline control experiment: starter suite, `reference` + `mockllm/control`, all five agents."""
        return cls(**overrides)

    @classmethod
    def from_yaml(cls, path: Path) -> ExperimentConfig:
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
            return cls.model_validate(data)
        except OSError as exc:
            raise ConfigError(f"cannot read experiment file {path}: {exc}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"experiment file {path} is not valid YAML: {exc}") from exc
        except ValidationError as exc:
            raise ConfigError(f"experiment file {path} is invalid: {describe_invalid_settings(exc, cls)}") from exc

    @property
    def model_names(self) -> list[str]:
        return [m if isinstance(m, str) else m["model"] for m in self.models]

    @property
    def is_control(self) -> bool:
        from sysmo.llm.roles import is_control_model

        return all(is_control_model(n) for n in self.model_names)

    @property
    def kind(self) -> str:
        """``control``, ``replay`` (every model is one) or ``live``: how the run is labelled everywhere."""
        from sysmo.llm.roles import run_kind

        return run_kind(self.model_names)

    @property
    def label(self) -> str:
        """``CONTROL``, ``REPLAY`` or "" (a live run carries no label)."""
        from sysmo.llm.roles import KIND_LABELS

        return KIND_LABELS[self.kind]

    def experiment_id(self) -> str:
        if self.id:
            if not re.fullmatch(r"[\w.-]+", self.id) or self.id.startswith("."):
                raise ConfigError(f"experiment id {self.id!r} may use only letters, digits, '.', '_' and '-', "
                                  "and may not start with '.'")
            return self.id
        digest = hashlib.sha256(self.model_dump_json(exclude={"id", "output_dir"}).encode()).hexdigest()[:8]
        prefix = {"control": "control", "replay": "replay"}.get(self.kind, "exp")
        return f"{prefix}-{datetime.now(UTC):%Y%m%d}-{digest}"

    def directory(self) -> Path:
        return self.output_dir / self.experiment_id()


@dataclass(frozen=True)
class WorkUnit:
    task: Task
    agent: str
    model: str
    sample: int
    experiment_id: str

    @property
    def attempt_id(self) -> str:
        """Stable within an experiment (resume finds finished units by it) and distinct across experiments."""
        key = f"{self.experiment_id}|{self.task.id}|{self.agent}|{self.model}|{self.sample}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass
class RunSummary:
    experiment_id: str
    directory: Path
    planned: int = 0
    skipped_done: int = 0
    ran: int = 0
    passed: int = 0
    errors: int = 0
    not_covered: int = 0  # replay: tasks the published source has no output for (neither passed nor failed)
    unsupported: list[tuple[str, str]] = field(default_factory=list)  # (agent, why it cannot do a task)
    missing_inputs: list[str] = field(default_factory=list)  # (agent, task) pairs run without an input, and why
    stopped: str | None = None  # why the run stopped early (interrupt, budget)
    cost_usd: float = 0.0
    tokens: int = 0
    seconds: float = 0.0


def task_meta(task: Task) -> dict[str, Any]:
    return {"benchmark": task.benchmark, "kind": task.kind.value, "domain": task.domain, "difficulty": task.difficulty}


def missing_inputs(config: ExperimentConfig, tasks: list[Task]) -> list[str]:
    """The (agent, task) pairs that run without an input the agent reads when present (the source), and why."""
    from sysmo.agents.registry import get_agent

    return [note for agent in config.agents for task in tasks for note in get_agent(agent).missing_inputs(task)]


def expand(config: ExperimentConfig, tasks: list[Task], experiment_id: str) -> tuple[list[WorkUnit], list[tuple[str, str]]]:
    """All work units, in a stable order, and the (agent, task) pairs skipped because the agent cannot do them."""
    from sysmo.agents.registry import UnsupportedTaskError, get_agent

    units: list[WorkUnit] = []
    unsupported: list[tuple[str, str]] = []
    for agent in config.agents:
        spec = get_agent(agent)
        for task in tasks:
            try:
                spec.check_supports(task)
            except UnsupportedTaskError as exc:
                unsupported.append((agent, str(exc)))
                continue
            for model in config.model_names:
                for sample in range(config.samples):
                    units.append(WorkUnit(task, agent, model, sample, experiment_id))
    return units, unsupported


def environment_record() -> dict[str, Any]:
    from sysmo import __version__
    from sysmo.sandbox.confine import describe_isolation

    isolation = describe_isolation()  # named in the experiment record and the report's provenance
    return {"sysmo": __version__, "python": platform.python_version(), "platform": platform.platform(),
            "host": platform.node(), "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "tool_isolation": f"{isolation['level']} ({isolation['detail']})"}


PERSIST_WAIT_S = 0.05  # the longest a finished attempt waits for a quiet moment before it is stored


class UnitRunner:
    """Runs one work unit end to end (attempt, score, store). Shared by the local and the Ray executors."""

    def __init__(self, config: ExperimentConfig, directory: Path) -> None:
        self.config = config
        self.directory = directory
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._tool_slots = threading.BoundedSemaphore(config.tool_concurrency)
        self._checkpoints: CheckpointStore | None = None
        self._checks_running = 0
        self._checking = threading.Event()  # set while an attempt's tool check runs (its event loop waits)

    def checkpoints(self) -> CheckpointStore:
        """The experiment's LangGraph checkpoint file (every step of every attempt), opened on first use."""
        with self._lock:
            if self._checkpoints is None:
                from sysmo.graphs.checkpoint import CheckpointStore

                self._checkpoints = CheckpointStore(self.directory / "checkpoints.sqlite")
            return self._checkpoints

    def close(self) -> None:
        with self._lock:
            if self._checkpoints is not None:
                self._checkpoints.close()
                self._checkpoints = None

    def _role_configs(self, model: str):
        from sysmo.llm.roles import ModelRoles, RoleConfig

        generator = next((m for m in self.config.models if (m if isinstance(m, str) else m["model"]) == model), model)
        roles: dict[str, Any] = {"generator": RoleConfig.model_validate(generator)}
        if self.config.helper is not None:
            roles["helper"] = RoleConfig.model_validate(self.config.helper)
        if self.config.judge is not None:
            roles["judge"] = RoleConfig.model_validate(self.config.judge)
        return ModelRoles(**roles)

    def client(self, model: str) -> Any:
        """One LLM client per generator model (it holds the cache, limits and mock script state)."""
        with self._lock:
            if model not in self._clients:
                from sysmo.llm import LLM

                client = LLM(self._role_configs(model), data_dir=self.config.data_dir)
                client.validate()  # providers built once here, not inside the first attempt; bad names fail now
                self._clients[model] = client
            return self._clients[model]

    def checker(self, artifact, task):
        from sysmo.tools.checkers import check_artifact

        with self._tool_slots:  # bounded pool of tool processes, sized to the machine
            self._count_check(+1)
            try:
                return check_artifact(artifact, task)
            finally:
                self._count_check(-1)

    def wait_for_a_tool_check(self, timeout_s: float | None = None) -> None:
        """Return once an attempt's tool check is running (or after ``timeout_s``). Storing and scoring a
        finished attempt hold the interpreter's lock for a few milliseconds; started while a check runs, that
        overlaps the tool's time instead of holding up the next attempt on the event loop (measured: 2.5 ms
        per attempt of the control, about a fifth of the harness's time)."""
        self._checking.wait(PERSIST_WAIT_S if timeout_s is None else timeout_s)

    def _count_check(self, delta: int) -> None:
        with self._lock:
            self._checks_running += delta
            (self._checking.set if self._checks_running else self._checking.clear)()

    def scoring_context(self, model: str) -> ScoringContext:
        client = self.client(model)
        helper = client if self.config.helper is not None else None
        judge = client if self.config.judge is not None else None
        return ScoringContext(helper=helper, judge=judge, options=dict(self.config.scoring))

    def _context(self, unit: WorkUnit) -> Any:
        from sysmo.graphs.context import AgentContext

        return AgentContext(task=unit.task, llm=self.client(unit.model), checker=self.checker,
                            attempt_id=unit.attempt_id, agent=unit.agent, sample_index=unit.sample,
                            max_rounds=self.config.max_rounds, temperature=self.config.temperature,
                            max_tokens=self.config.max_tokens, feedback=self.config.feedback,
                            strategy=self.config.strategy, data_dir=self.config.data_dir)

    def _checkpoint_store(self) -> CheckpointStore | None:
        return self.checkpoints() if self.config.checkpoints == "steps" else None

    def run_attempt(self, unit: WorkUnit) -> Attempt:
        """The attempt on an event loop of its own (Ray workers)."""
        from sysmo.agents.run import run_attempt

        return run_attempt(unit.agent, self._context(unit), model_name=unit.model, checkpoints=self._checkpoint_store())

    async def arun_attempt(self, unit: WorkUnit) -> tuple[Attempt, StepRecorder | None]:
        """The attempt on the running event loop (the local executor): its model calls are awaited there.
        Returns it with its steps' checkpoints in memory (None with ``checkpoints: none``), for ``keep``."""
        from sysmo.agents.run import arun_attempt_steps

        store = self._checkpoint_store()
        steps = store.recorder() if store is not None else None
        attempt = await arun_attempt_steps(unit.agent, self._context(unit), model_name=unit.model, steps=steps)
        return attempt, steps

    def keep(self, attempt: Attempt, steps: StepRecorder | None, store: Store, experiment_id: str, meta: dict[str, Any]) -> None:
        """Store a finished attempt: its steps' checkpoints first, then its artifacts and its record, so an
        attempt on record always has its steps (a SIGKILL in between re-runs it on resume, from the LLM cache)."""
        if steps is not None:
            self.checkpoints().save(steps, attempt.id)
        self.write_artifacts(attempt)
        store.save_attempt(experiment_id, attempt, meta)

    def score_key(self, unit: WorkUnit, attempt: Attempt) -> str | None:
        """Scoring is a function of (artifact, task, options, helper/judge models): identical artifacts score once."""
        if attempt.final_artifact is None:
            return None
        payload = json.dumps({"artifact": attempt.final_artifact.sha256, "task": unit.task.id, "kind": unit.task.kind.value,
                              "options": self.config.scoring, "helper": self.config.helper, "judge": self.config.judge},
                             sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()

    def score(self, unit: WorkUnit, attempt: Attempt, store: Store | None = None) -> ScoreCard:
        return self.score_with_events(unit, attempt, store)[0]

    def score_with_events(self, unit: WorkUnit, attempt: Attempt, store: Store | None = None) -> tuple[ScoreCard, list[Any]]:
        """The attempt's scorecard and the scoring's events: every helper/judge model call it made, then one
        ``ScoreStageEvent`` per stage (a scorecard from the score cache made no calls)."""
        from sysmo.contracts.events import EventLog, ScoreStageEvent, collecting

        key = self.score_key(unit, attempt)
        events = EventLog()
        card = store.cached_scorecard(key) if store is not None and key is not None else None
        if card is None:
            with self._tool_slots, collecting(events, stage="score"):
                card = cascade_for(unit.task.kind).score(attempt.final_artifact, unit.task,
                                                         self.scoring_context(unit.model))
            if store is not None and key is not None and not any(s.outcome in ("error", "inconclusive")
                                                                 for s in card.stages):
                store.cache_scorecard(key, card)
        for stage in card.stages:
            events.add(ScoreStageEvent(name=stage.stage, outcome=stage.outcome, score=stage.value,
                                       duration_s=stage.duration_s, detail=stage.skipped_because))
        return card, events.events

    def write_artifacts(self, attempt: Attempt) -> None:
        """Each round's artifact on disk: <dir>/artifacts/<attempt>/round<i>/<file>."""
        for rnd in attempt.rounds:
            if rnd.artifact is None:
                continue
            folder = self.directory / "artifacts" / attempt.id / f"round{rnd.index}"
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in rnd.artifact.files.items():
                (folder / Path(name).name).write_text(text)


def load_selected_tasks(config: ExperimentConfig) -> list[Task]:
    from sysmo.benchmarks.registry import load_tasks

    families = config.tasks.benchmarks or None
    tasks = load_tasks(config.data_dir, families=families, sources_dir=config.sources_dir)
    chosen = config.tasks.apply(tasks)
    if not chosen:
        raise ConfigError("the task selection matches no task; try `sysmo tasks list` with the same filters")
    return chosen


def run_experiment(config: ExperimentConfig, *, progress: bool = True, resume: bool = False,
                   stop_event: threading.Event | None = None) -> RunSummary:
    """Run (or resume) an experiment; finished units are skipped. Returns a summary of this invocation.

    One process at a time per experiment id (``experiment_lock``): a second run on the same id is refused."""
    experiment_id = config.experiment_id()
    with experiment_lock(config.output_dir, experiment_id):
        return _run_experiment(config, experiment_id, progress=progress, resume=resume, stop_event=stop_event)


def _run_experiment(config: ExperimentConfig, experiment_id: str, *, progress: bool, resume: bool,
                    stop_event: threading.Event | None) -> RunSummary:
    started = time.monotonic()
    directory = config.output_dir / experiment_id
    if not resume and (directory / "results.sqlite").exists():
        raise SysmoError(f"experiment {experiment_id} already exists in {directory}; resume it with "
                         f"`sysmo run --resume {experiment_id}` or choose another --id")
    if resume:
        Store.check_resumable(directory / "results.sqlite", experiment_id)
    runner = UnitRunner(config, directory)
    for model in config.model_names:  # unknown models and missing API keys stop the run before any work
        try:
            runner.client(model)
        except SysmoError as exc:
            raise ConfigError(f"model {model!r} cannot be used: {exc}") from exc
    for entry in config.models:  # and their servers: a dead --api-base stops the run now, not after retries
        api_base = entry.get("api_base") if isinstance(entry, dict) else getattr(entry, "api_base", None)
        if api_base:
            check_reachable(api_base)
    # unknown agents, an empty task selection: stop before the experiment exists (its id stays free)
    tasks = load_selected_tasks(config)
    units, unsupported = expand(config, tasks, experiment_id)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    store = Store(directory / "results.sqlite")
    store.save_experiment(experiment_id, config.model_dump(mode="json"), environment_record(), config.is_control)
    done = store.scored_attempt_ids(experiment_id) if config.score else store.finished_attempt_ids(experiment_id)
    attempted = store.finished_attempt_ids(experiment_id)
    pending = [u for u in units if u.attempt_id not in done]
    summary = RunSummary(experiment_id=experiment_id, directory=directory, planned=len(units),
                         skipped_done=len(units) - len(pending), unsupported=unsupported,
                         missing_inputs=missing_inputs(config, sorted({u.task.id: u.task for u in units}.values(),
                                                                      key=lambda t: t.id)))
    for note in summary.missing_inputs:
        log.warning("experiment.missing_input", note=note)
    log.info("experiment.start", id=experiment_id, units=len(units), pending=len(pending), control=config.is_control,
             kind=config.kind)
    stop = stop_event or threading.Event()
    totals = store.query("SELECT COALESCE(SUM(COALESCE(spend_usd, cost_usd)), 0) AS cost, COALESCE(SUM(prompt_tokens + completion_tokens), 0)"
                         " AS tokens FROM attempts WHERE experiment_id=?", (experiment_id,))[0]
    scoring = store.query("SELECT COALESCE(SUM(json_extract(events.json, '$.spend_usd')), 0) AS cost FROM events"
                          " JOIN attempts ON attempts.id = events.attempt_id WHERE experiment_id=?"
                          " AND events.stage='score' AND events.type='llm_call'", (experiment_id,))[0]
    spent = {"cost": float(totals["cost"]) + float(scoring["cost"]),  # caps count earlier runs too
             "tokens": int(totals["tokens"])}

    def over_budget() -> str | None:
        b = config.budget
        if b.max_cost_usd is not None and spent["cost"] >= b.max_cost_usd:
            return f"budget cap reached: ${spent['cost']:.2f} >= ${b.max_cost_usd:.2f}"
        if b.max_tokens is not None and spent["tokens"] >= b.max_tokens:
            return f"token cap reached: {spent['tokens']} >= {b.max_tokens}"
        return None

    def score(unit: WorkUnit, attempt: Attempt) -> None:
        card, events = runner.score_with_events(unit, attempt, store)
        store.save_score(experiment_id, attempt.id, card, events)
        scoring_spend = sum(getattr(e, "spend_usd", 0.0) for e in events)  # helper and judge calls
        spent["cost"] += scoring_spend
        summary.cost_usd += scoring_spend

    async def run_unit(unit: WorkUnit) -> tuple[WorkUnit, Attempt, StepRecorder | None]:
        """Stage 1 of a unit, on the event loop: the attempt (model calls awaited, tool checks in worker threads).
        An attempt that finished before an interruption (only its score is missing) comes from the store."""
        if unit.attempt_id in attempted:
            return unit, await asyncio.to_thread(store.attempt, unit.attempt_id), None
        attempt, steps = await runner.arun_attempt(unit)
        return unit, attempt, steps

    async def persist_unit(unit: WorkUnit, attempt: Attempt, steps: StepRecorder | None, fresh: bool) -> tuple[WorkUnit, Attempt]:
        """Stage 2, in a worker thread while the next attempts run: steps, artifacts and record stored, then the
        score; it starts when the next attempt waits for a tool."""

        def store_and_score() -> None:
            runner.wait_for_a_tool_check()
            if fresh:
                runner.keep(attempt, steps, store, experiment_id, task_meta(unit.task))
            if config.score:
                score(unit, attempt)

        await asyncio.to_thread(store_and_score)
        return unit, attempt

    if config.executor == "ray":
        from sysmo.ray_executor import run_on_ray

        return run_on_ray(config, pending, summary, store, started)

    from sysmo.progress import RunProgress

    with RunProgress(total=len(units), done=summary.skipped_done, enabled=progress,
                     label=f"{experiment_id}{f' [{config.label}]' if config.label else ''}") as bar:
        previous_handler = None
        if threading.current_thread() is threading.main_thread():
            def on_sigint(signum, frame):  # first Ctrl-C: finish running attempts; second: stop now
                if stop.is_set():
                    raise KeyboardInterrupt
                stop.set()
                bar.note("stopping: finishing the attempts in flight (Ctrl-C again to abort; `sysmo run --resume` continues)")
            previous_handler = signal.signal(signal.SIGINT, on_sigint)
        async def schedule() -> None:
            """A two-stage pipeline: up to ``concurrency`` attempts run while up to as many finished ones are
            stored and scored, so writing results does not hold up the next attempts."""
            queue = list(pending)
            running: set[asyncio.Task] = set()
            persisting: set[asyncio.Task] = set()
            try:
                while queue or running or persisting:
                    reason = over_budget()
                    if reason and not summary.stopped:
                        summary.stopped = reason
                        bar.note(reason)
                    while (queue and len(running) < config.concurrency and len(persisting) <= config.concurrency
                           and not stop.is_set() and not summary.stopped):
                        running.add(asyncio.ensure_future(run_unit(queue.pop(0))))
                    if not running and not persisting:
                        break
                    finished, _ = await asyncio.wait(running | persisting, return_when=asyncio.FIRST_COMPLETED)
                    for task in finished:
                        stage_one = task in running
                        (running if stage_one else persisting).discard(task)
                        try:
                            result = task.result()
                        except SysmoError as exc:
                            summary.errors += 1
                            bar.note(f"error: {exc}")
                            continue
                        if stage_one:
                            unit, attempt, steps = result
                            fresh = unit.attempt_id not in attempted
                            if fresh:  # budget caps count an attempt's new money as soon as its calls are made
                                spent["cost"] += attempt.spend_usd
                                spent["tokens"] += attempt.prompt_tokens + attempt.completion_tokens
                            persisting.add(asyncio.ensure_future(persist_unit(unit, attempt, steps, fresh)))
                            continue
                        unit, attempt = result
                        summary.ran += 1
                        summary.cost_usd += attempt.spend_usd
                        summary.tokens += attempt.prompt_tokens + attempt.completion_tokens
                        if attempt.status == AttemptStatus.PASSED:
                            summary.passed += 1
                        elif attempt.status == AttemptStatus.ERROR:
                            summary.errors += 1
                        elif attempt.status == AttemptStatus.NOT_COVERED:
                            summary.not_covered += 1
                        bar.advance(passed=attempt.status == AttemptStatus.PASSED, cost=attempt.spend_usd)
            except BaseException:
                # an unexpected failure (a full disk, a bug) or an abort: the other units stop before the loop
                # closes; what was stored stays, the rest runs again on resume
                for task in running | persisting:
                    task.cancel()
                await asyncio.gather(*running, *persisting, return_exceptions=True)
                raise

        try:
            # asyncio for the model calls; tool checks, scoring and store writes in the loop's worker threads,
            # the tool processes bounded by the runner's tool slots (sized to the machine)
            with ThreadPoolExecutor(max_workers=2 * config.concurrency + config.tool_concurrency + 2,  # both stages
                                    thread_name_prefix="sysmo-work") as workers:
                loop = asyncio.new_event_loop()
                loop.set_default_executor(workers)
                try:
                    loop.run_until_complete(schedule())
                finally:
                    loop.run_until_complete(loop.shutdown_asyncgens())
                    loop.close()
            if stop.is_set() and not summary.stopped:
                summary.stopped = "interrupted"
        finally:
            if previous_handler is not None:
                signal.signal(signal.SIGINT, previous_handler)
    runner.close()
    store.set_experiment_status(experiment_id, "stopped" if summary.stopped else "finished")
    summary.seconds = time.monotonic() - started
    store.close()
    return summary
