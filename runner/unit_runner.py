"""``UnitRunner``: one work unit end to end (attempt, score), with the clients, tool slots and checkpoint file
an experiment's attempts share. The local and the Ray executors both run units through it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sysmo.contracts.attempt import Attempt
from sysmo.contracts.scorecard import ScoreCard
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.runner.config import ExperimentConfig
from sysmo.runner.units import WorkUnit
from sysmo.store import Store

if TYPE_CHECKING:  # langgraph's SQLite saver is imported when an experiment first keeps steps
    from sysmo.graphs.checkpoint import CheckpointStore, StepRecorder

PERSIST_WAIT_S = 0.05  # the longest a finished attempt waits for a quiet moment before it is stored
# an attempt run away from the driver: (its rows, its recorded steps or None, its scorecard's JSON or None, the
# scoring's events as JSON), see ``UnitRunner.arun_rows``
UnitRows = tuple[Any, list[Any] | None, str | None, list[str]]


def portable_calls(calls: list[Any]) -> list[Any]:
    """Recorded checkpoint calls without LangGraph's run-time entries of the config (``__pregel_runtime`` etc.:
    live objects, neither picklable nor read by a saver, which keeps thread id, namespace and checkpoint id)."""
    return [dataclasses.replace(call, config={"configurable": {k: v for k, v in call.config["configurable"].items()
                                                               if not k.startswith("__")}}) for call in calls]


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
        """Return once an attempt's tool check is running (or after ``timeout_s``). Storing a batch of finished
        attempts holds the interpreter's lock for milliseconds; started while a check runs, that overlaps the
        tool's time instead of holding up the next attempts on the event loop (the writer thread waits here
        before each batch)."""
        self._checking.wait(PERSIST_WAIT_S if timeout_s is None else timeout_s)

    def _count_check(self, delta: int) -> None:
        with self._lock:
            self._checks_running += delta
            (self._checking.set if self._checks_running else self._checking.clear)()

    def scoring_context(self, model: str) -> ScoringContext:
        client = self.client(model)
        helper = client if self.config.helper is not None else None
        judge = client if self.config.judge is not None else None
        return ScoringContext(helper=helper, judge=judge, options=self.config.scoring_options())

    def agent_context(self, unit: WorkUnit) -> Any:
        """The ``AgentContext`` of the unit's attempt: its task, the model's client, the tool check, the limits."""
        from sysmo.graphs.context import AgentContext

        arm = unit.arm if unit.arm is not None else self.config.arms()[0]
        # each arm factor is the AgentContext field of its name (sysmo.contracts.arms.ARM_FACTORS)
        return AgentContext(task=unit.task, llm=self.client(unit.model), checker=self.checker,
                            attempt_id=unit.attempt_id, agent=unit.agent, sample_index=unit.sample,
                            max_tokens=self.config.max_tokens, data_dir=self.config.data_dir,
                            workspace_dir=self.directory / "artifacts" / unit.attempt_id / "workspace",
                            seed=unit.seed, arm=arm.as_dict(), time_limit_s=self.config.attempt_timeout or None,
                            **arm.as_dict())

    def _checkpoint_store(self) -> CheckpointStore | None:
        return self.checkpoints() if self.config.checkpoints == "steps" else None

    def run_attempt(self, unit: WorkUnit) -> Attempt:
        """The attempt on an event loop of its own (Ray workers)."""
        from sysmo.agents.run import run_attempt

        return run_attempt(unit.agent, self.agent_context(unit), model_name=unit.model, checkpoints=self._checkpoint_store())

    async def arun_attempt(self, unit: WorkUnit) -> tuple[Attempt, StepRecorder | None]:
        """The attempt on the running event loop (the local executor): its model calls are awaited there.
        Returns it with its steps' checkpoints in memory (None with ``checkpoints: none``), for ``keep``."""
        from sysmo.agents.run import arun_attempt_steps

        from sysmo.graphs import live

        store = self._checkpoint_store()
        steps = store.recorder() if store is not None else None
        if self.config.executor != "local":  # a Ray node's disk is not the experiment's folder
            return await arun_attempt_steps(unit.agent, self.agent_context(unit), model_name=unit.model,
                                            steps=steps), steps
        # its rounds, as they finish, for `sysmo view` (graphs.live), once it has run a while: gone once stored
        with live.publishing(self.directory, live.LiveAttempt(id=unit.attempt_id, task_id=unit.task.id,
                                                              agent=unit.agent, model=unit.model,
                                                              sample_index=unit.sample, arm=unit.arm_key),
                             after_s=live.PUBLISH_AFTER_S):
            attempt = await arun_attempt_steps(unit.agent, self.agent_context(unit), model_name=unit.model,
                                               steps=steps)
        return attempt, steps

    async def arun_rows(self, unit: WorkUnit, *, artifacts: bool = False) -> UnitRows:
        """The unit's attempt run here (and scored, if the run scores), returned as what the driver's writer
        stores: the attempt's rows (``AttemptRecord``), its recorded steps (portable: no live objects), its
        scorecard and the scoring's events as JSON. Used where attempts run away from the driver (Ray's actors,
        the local executor's worker processes); ``artifacts``: write the artifact files here (same machine)."""
        import asyncio

        from sysmo.runner.units import task_meta
        from sysmo.store import AttemptRecord

        attempt, steps = await self.arun_attempt(unit)
        card, events = ((await asyncio.to_thread(self.score_with_events, unit, attempt)) if self.config.score
                        else (None, []))
        if artifacts:  # system calls (folders, files): in a thread, while the loop runs other attempts
            await asyncio.to_thread(self.write_artifacts, attempt)
        # plain rows and JSON (pydantic models may hold unpicklable caches); the recorded checkpoint calls
        # (already serialised) travel as they are, the recorder itself holds thread-locals
        return (AttemptRecord.of(attempt, task_meta(unit.task)),
                portable_calls(steps.calls) if steps is not None else None,
                card.model_dump_json() if card is not None else None, [e.model_dump_json() for e in events])

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
        """Each round's artifact on disk: <dir>/artifacts/<attempt>/round<i>/<file> (an agent working on files,
        openhands, leaves its workspace beside them: <dir>/artifacts/<attempt>/workspace/). Written with the
        fewest system calls (two folders, then open, write, close per file): the run's writer does this for
        every attempt."""
        folder = os.path.join(self.directory, "artifacts", attempt.id)
        made = False
        for rnd in attempt.rounds:
            if rnd.artifact is None:
                continue
            if not made:
                _make_folder(folder)
                made = True
            round_folder = os.path.join(folder, f"round{rnd.index}")
            _make_folder(round_folder)
            for name, text in rnd.artifact.files.items():
                path = os.path.join(round_folder, Path(name).name)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                try:
                    data = memoryview(text.encode())
                    while data:
                        data = data[os.write(fd, data):]
                finally:
                    os.close(fd)


def _make_folder(path: str) -> None:
    """``path`` as a folder, there already or not (one system call when its parent exists)."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(path, exist_ok=True)
