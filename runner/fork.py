"""``sysmo fork ATTEMPT --at STEP``: run a stored attempt again from one of its graph steps, with a change (another
generator model, another feedback level, another prompt), as a new attempt of the same experiment linked to it.

The fork is a LangGraph fork through LangGraph's public API, on the experiment's checkpoint file:

1. the parent's steps up to the chosen one (``graph.aget_state_history`` finds it) are copied to the fork's own
   thread (thread id = the fork's attempt id) with the saver's ``aget_tuple`` / ``aput``, checkpoint ids and
   values as they were, so the fork's history starts with the parent's steps;
2. the fork's changes to the state are written with ``graph.aupdate_state`` as the node that made that step, going
   on to the node that came next (a ``Command``): always the round's clock (``round_started``: the fork's own time
   from here), and the next model request when it changes (``--prompt-file``, or the repair feedback it carries:
   ``--feedback``);
3. ``graph.astream(None, config_with_checkpoint_id)`` (``ainvoke``'s streaming form) runs the rest with the
   real tools and the fork's model client; the new steps are checkpointed in the same file.

The fork runs with the parent's arm (every arm factor as the parent ran it, ``--feedback`` replacing one) and the
parent's per-sample seed, and its clock starts when it resumes: the rounds it took from the parent keep the parent's
timings, its own rounds are timed by its own run. The attempt is then recorded, its artifacts written and it is
scored like any attempt (``UnitRunner``).

>>> result = fork_attempt(store, attempt, ForkRequest(at="round:2", model="openai/gpt-4.1"))
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sysmo.contracts.arms import ARM_FACTORS, Arm
from sysmo.contracts.attempt import Attempt
from sysmo.errors import ConfigError, SysmoError
from sysmo.graphs.checkpoint import FORK_COPY, UPDATE_STATE, CheckpointStep, history
from sysmo.graphs.checkpoint_texts import TextsSerializer
from sysmo.graphs.repair import Feedback
from sysmo.log import get_logger
from sysmo.runner.units import WorkUnit

log = get_logger(__name__)

ROUND_STEP = re.compile(r"round:(\d+)")
MIN_ID_PREFIX = 4  # a shorter checkpoint id prefix is more likely a typo than a choice


class ForkError(SysmoError):
    """An attempt cannot be forked as asked (no checkpoints, an unknown step, a step with nothing after it)."""


class ForkRequest(BaseModel):
    """What ``sysmo fork`` was asked: where to resume, and what to change there (None: as the parent had it)."""

    at: str
    model: str | None = None
    api_base: str | None = None  # the OpenAI-compatible endpoint of ``model`` (when it is not in the experiment)
    feedback: Feedback | None = None
    prompt_file: Path | None = None


class ForkResult(BaseModel):
    attempt_id: str
    parent_attempt_id: str
    experiment_id: str
    forked_at: str  # the checkpoint id resumed
    forked_at_step: int
    status: str
    rounds: int
    inherited_rounds: int
    changes: dict[str, str] = Field(default_factory=dict)
    arm: str  # every arm factor the fork ran with (``Arm.label``): the parent's, with the change applied
    seed: int | None  # the per-sample seed sent with its model calls: the parent's (None: the parent sent none)
    duration_s: float  # the fork's own run, from where it resumed to its end (the inherited rounds not included)
    scores: dict[str, float] = Field(default_factory=dict)  # each scoring stage's value (empty: not scored)
    notes: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class ForkUnit(WorkUnit):
    """The fork's work unit: the parent's task, agent and sample, the fork's model, and an attempt id of its own
    (a fresh one: forking twice from one step gives two attempts)."""

    fork_id: str = ""

    @property  # type: ignore[override]
    def attempt_id(self) -> str:
        return self.fork_id


# ---------------------------------------------------------------------------------------------------- steps
def forkable(steps: list[CheckpointStep]) -> list[CheckpointStep]:
    """The steps a fork can resume: those with a node to run after them (not the input, not the end)."""
    return [s for s in steps if s.next]


def _step_label(step: CheckpointStep) -> str:
    before_call = step.next == ["generate"] and step.round_index is not None
    return f"{step.step}" + (f" (round:{step.round_index})" if before_call
                              else f" (after {step.node})" if step.node else " (start)")


def describe_steps(steps: list[CheckpointStep]) -> str:
    """The forkable steps in one line, as ``--at`` takes them."""
    return ", ".join(_step_label(s) for s in forkable(steps)) or "none"


def resolve_step(steps: list[CheckpointStep], ref: str, attempt_id: str) -> CheckpointStep:
    """The step ``ref`` names: ``round:N`` (the state just before round N's model call), a step number as
    ``sysmo trace`` lists it, or a checkpoint id (or a unique prefix of one)."""
    candidates = forkable(steps)
    ref = ref.strip()
    if match := ROUND_STEP.fullmatch(ref):
        index = int(match.group(1))
        found = [s for s in candidates if s.next == ["generate"] and s.round_index == index]
    elif re.fullmatch(r"-?\d+", ref):
        found = [s for s in steps if s.step == int(ref)]
    else:
        found = [s for s in steps if s.checkpoint_id == ref] or (
            [s for s in steps if s.checkpoint_id.startswith(ref)] if len(ref) >= MIN_ID_PREFIX else [])
        if len(found) > 1:
            raise ForkError(f"checkpoint id prefix {ref!r} is ambiguous in attempt {attempt_id}: "
                            + ", ".join(s.checkpoint_id for s in found[:5]))
    if not found:
        raise ForkError(f"attempt {attempt_id} has no step {ref!r}; forkable steps: {describe_steps(steps)} "
                        f"(or a checkpoint id from `sysmo trace {attempt_id}`)")
    step = found[-1]  # a step number a fork of the thread repeats: the latest
    if not step.next:
        raise ForkError(f"step {ref!r} of attempt {attempt_id} is {'its end' if step.status else 'its input'}: "
                        f"nothing runs after it; forkable steps: {describe_steps(steps)}")
    return step


def checkpoint_file(attempt: Attempt, experiment_dir: Path) -> Path:
    """The attempt's checkpoint file: its experiment's (a runs folder copied or moved keeps its own), else where
    it was recorded."""
    if not attempt.checkpoint_db:
        raise ForkError(f"attempt {attempt.id} was stored without checkpoints (its experiment ran with "
                        "`checkpoints: none`), so it has no step to fork from; run it again with "
                        "--checkpoints steps")
    recorded = Path(attempt.checkpoint_db)
    found = next((p for p in (experiment_dir / recorded.name, recorded) if p.is_file()), None)
    if found is None:
        raise ForkError(f"the checkpoint file of attempt {attempt.id} is gone ({recorded}; not in "
                        f"{experiment_dir} either)")
    return found


# ---------------------------------------------------------------------------------------------------- changes
def fork_arm(parent: Attempt, request: ForkRequest) -> Arm:
    """The arm the fork runs with: the parent's value of every arm factor (as it ran them, whichever arm of its
    experiment it was), with the requested change parsed as one value of its factor."""
    values = parent.arm_values()
    if request.feedback is not None:
        values["feedback"] = ARM_FACTORS["feedback"].parse(request.feedback.value)
    return Arm.of(values)


def restart_clock(values: dict[str, Any]) -> dict[str, Any]:
    """The round clock of the state the fork resumes (``round_started``, a ``time.monotonic`` reading): now,
    less the time the parent's round had already spent in its model calls and tool checks at that step (none at
    ``round:N``). The parent's reading would time the fork's round from when the parent was at that step."""
    spent = float(values.get("llm_time_s") or 0.0) + float(values.get("tool_time_s") or 0.0)
    return {"round_started": time.monotonic() - spent}


def read_prompt_file(path: Path) -> list[dict[str, Any]] | str:
    """A ``--prompt-file``: a JSON list of chat messages (``[{"role": ..., "content": ...}, ...]``) is a whole
    request; any other file's text is the content of the request's last user message."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read --prompt-file {path}: {exc.strerror or exc}") from exc
    if path.suffix.lower() == ".json":
        try:
            messages = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--prompt-file {path} is not valid JSON ({exc}); give a list of "
                              '{"role": ..., "content": ...} messages, or a text file') from exc
        if not (isinstance(messages, list) and messages and all(
                isinstance(m, dict) and m.get("role") in ("system", "user", "assistant")
                and isinstance(m.get("content"), str) for m in messages)):
            raise ConfigError(f"--prompt-file {path} must hold a list of chat messages, each "
                              '{"role": "system"|"user"|"assistant", "content": "..."}')
        return messages
    if not text.strip():
        raise ConfigError(f"--prompt-file {path} is empty")
    return text


def _repair_message(values: dict[str, Any], language_name: str, feedback: str) -> str | None:
    """The repair request the shared repair loop made for the round before ``values``' round, at ``feedback``
    (None when there is no such round)."""
    from sysmo.contracts.artifact import Artifact
    from sysmo.contracts.check import CheckResult
    from sysmo.graphs.repair import CUT_AT_TOKEN_LIMIT, repair_request

    rounds = values.get("rounds") or []
    if not rounds or rounds[-1].get("index") != (values.get("round_index") or 0) - 1:
        return None
    last = rounds[-1]
    artifact = Artifact.model_validate(last["artifact"]) if last.get("artifact") else None
    check = CheckResult.model_validate(last["check"]) if last.get("check") else None
    if check is None and not last.get("extraction_error"):
        return None
    return repair_request(artifact, check, last.get("extraction_error"), language_name, feedback,
                          cut_at_token_limit=CUT_AT_TOKEN_LIMIT in (last.get("extraction_notes") or []))


def state_changes(values: dict[str, Any], step: CheckpointStep, request: ForkRequest, parent: Attempt,
                  language_name: str, notes: list[str]) -> dict[str, Any]:
    """The state update the fork writes at ``step`` (``aupdate_state``): the next model request (``pending``)
    with the new feedback and/or the prompt file. Empty when only the model changes (it is not in the state)."""
    before_call = step.next == ["generate"]
    if request.prompt_file is not None and not before_call:
        raise ForkError(f"--prompt-file replaces the next model request, and step {step.step} is not just before "
                        f"a model call (next: {', '.join(step.next)}); fork at round:N")
    pending = [dict(m) for m in values.get("pending") or []]
    changed = False
    if request.feedback is not None and before_call and request.feedback.value != parent.feedback:
        old = _repair_message(values, language_name, parent.feedback)
        if old is not None and pending and pending[-1].get("role") == "user" and pending[-1].get("content") == old:
            pending[-1]["content"] = _repair_message(values, language_name, request.feedback.value)
            changed = True
        else:
            notes.append(f"the request at step {step.step} is not a repair request of the shared loop: "
                         f"--feedback {request.feedback.value} applies from the next repair round on")
    budget = fork_max_rounds(parent, request)
    if budget is not None and values.get("max_rounds") is not None and budget != values.get("max_rounds"):
        # feedback none runs one shot (max_rounds 0 in the state the fork copies): a fork to another level gets
        # its arm's repair rounds, and a fork to none no more
        update_budget = {"max_rounds": budget}
    else:
        update_budget = {}
    if request.prompt_file is not None:
        prompt = read_prompt_file(request.prompt_file)
        if isinstance(prompt, list):
            pending = [dict(m) for m in prompt]
        else:
            users = [i for i, m in enumerate(pending) if m.get("role") == "user"]
            if not users:
                raise ForkError(f"the request at step {step.step} has no user message for --prompt-file to replace; "
                                "give the whole request as a JSON list of messages")
            pending[users[-1]]["content"] = prompt
        changed = True
    return ({"pending": pending} if changed else {}) | update_budget


def fork_max_rounds(parent: Attempt, request: ForkRequest) -> int | None:
    """The repair rounds the fork may take when ``--feedback`` changes the level (None: it does not): none for
    feedback none (one shot), else the arm's ``max_rounds``, as a run of that arm would have."""
    if request.feedback is None or request.feedback.value == parent.feedback:
        return None
    if request.feedback.value == "none":
        return 0
    return int(parent.arm_values().get("max_rounds") or 0)


# ---------------------------------------------------------------------------------------------------- the run
async def _copy_steps(saver: Any, parent_config: dict[str, Any], thread_id: str) -> dict[str, Any]:
    """The parent's checkpoints from its first to ``parent_config``'s, put in thread ``thread_id`` in order (same
    ids, values and metadata); returns the config of the last one there."""
    chain = []
    tup = await saver.aget_tuple(parent_config)
    while tup is not None:
        chain.append(tup)
        tup = await saver.aget_tuple(tup.parent_config) if tup.parent_config else None
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for tup in reversed(chain):
        config = await saver.aput(config, tup.checkpoint, tup.metadata, dict(tup.checkpoint["channel_versions"]))
    return config


async def _fork_point(db: Path, spec: Any, ctx: Any, parent_id: str, checkpoint_id: str) -> Any:
    """The parent's state at ``checkpoint_id``, as LangGraph's ``aget_state_history`` gives it (a ``StateSnapshot``)."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from sysmo.agents.run import compiled_graph

    async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
        saver.serde = TextsSerializer(path=db)  # the steps' long texts are stored once in the file
        graph = compiled_graph(spec, ctx).copy({"checkpointer": saver})
        async for snapshot in graph.aget_state_history({"configurable": {"thread_id": parent_id}}):
            if snapshot.config["configurable"]["checkpoint_id"] == checkpoint_id:
                return snapshot
    raise ForkError(f"checkpoint {checkpoint_id} of attempt {parent_id} is not in {db}")


def _fork_graph_run(db: Path, point: Any, step: CheckpointStep, update: dict[str, Any]):
    """The ``run_graph`` of ``arun_attempt_steps`` for the fork (see the module doc): the parent's steps up to
    ``point`` copied to the fork's thread, ``update`` written there, and the rest run."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.types import Command

    from sysmo.agents.run import compiled_graph, drive_within

    async def run(spec: Any, ctx: Any, config: dict[str, Any]) -> dict[str, Any]:
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            saver.serde = TextsSerializer(path=db)  # the steps' long texts are stored once in the file
            graph = compiled_graph(spec, ctx).copy({"checkpointer": saver})
            at = await _copy_steps(saver, point.config, ctx.attempt_id)
            # the change, with the round's clock restarted now (the fork's own time, not the time since the
            # parent was here); written as the step's node, going on to the node that came next
            as_node = step.node if step.node and step.node not in (UPDATE_STATE, FORK_COPY) else None
            goto = step.next[0] if len(step.next) == 1 else step.next
            change = {**update, **restart_clock(dict(point.values))}
            at = await graph.aupdate_state(at, Command(update=change, goto=goto), as_node=as_node)
            values = dict((await graph.aget_state(at)).values)
            resume = {**config, "configurable": {**config["configurable"], **at["configurable"]}}
            return await drive_within(graph, None, resume, ctx, values=values, durability="sync")

    return run


def fork_attempt(store: Any, parent: Attempt, request: ForkRequest) -> ForkResult:
    """Fork ``parent`` (read from ``store``) as ``request`` says, run it to its end, store and score it."""
    from sysmo.agents.registry import get_agent
    from sysmo.agents.run import arun_attempt_steps
    from sysmo.graphs.nodes import LANGUAGE_NAMES
    from sysmo.llm.endpoint import check_reachable
    from sysmo.runner.config import ExperimentConfig
    from sysmo.runner.unit_runner import UnitRunner
    from sysmo.runner.units import load_selected_tasks, task_meta

    experiment_id = store.query("SELECT experiment_id FROM attempts WHERE id=?", (parent.id,))[0]["experiment_id"]
    directory = store.path.parent
    db = checkpoint_file(parent, directory)
    step = resolve_step(history(db, parent.id), request.at, parent.id)
    config = ExperimentConfig.model_validate(store.experiment(experiment_id)["config"])
    model = request.model or parent.model
    update: dict[str, Any] = {"concurrency": 1}
    known = [m if isinstance(m, str) else m["model"] for m in config.models]
    if request.model and (request.api_base or request.model not in known):
        entry: str | dict[str, Any] = {"model": request.model, "api_base": request.api_base} if request.api_base \
            else request.model
        update["models"] = [m for m in config.models if (m if isinstance(m, str) else m["model"]) != request.model] \
            + [entry]
    config = config.model_copy(update=update)  # the arm is the parent's (fork_arm), not the experiment's first
    task = next((t for t in load_selected_tasks(config) if t.id == parent.task_id), None)
    if task is None:
        raise ForkError(f"task {parent.task_id} of attempt {parent.id} is not in its experiment's selection any more")
    changes = {k: v for k, v in (("model", request.model), ("feedback", request.feedback and request.feedback.value),
                                 ("prompt_file", request.prompt_file and str(request.prompt_file))) if v}
    arm = fork_arm(parent, request)
    unit = ForkUnit(task, parent.agent, model, parent.sample_index, experiment_id, arm=arm, seed=parent.seed,
                    fork_id=uuid.uuid4().hex[:16])
    runner = UnitRunner(config, directory)
    notes: list[str] = []
    try:
        try:  # an unknown model, a missing key or a dead server: one line now, before anything is written
            runner.client(model)
            if request.api_base:
                check_reachable(request.api_base)
        except SysmoError as exc:
            raise ConfigError(f"model {model!r} cannot be used: {exc}") from exc
        spec, ctx = get_agent(parent.agent), runner.agent_context(unit)
        point = asyncio.run(_fork_point(db, spec, ctx, parent.id, step.checkpoint_id))
        values = dict(point.values)
        language = LANGUAGE_NAMES.get(task.language.value, task.language.value)
        update = state_changes(values, step, request, parent, language, notes)  # a bad --prompt-file stops here
        attempt = asyncio.run(arun_attempt_steps(parent.agent, ctx, model_name=model,
                                                 run_graph=_fork_graph_run(db, point, step, update),
                                                 checkpoint_db=db))
        attempt.parent_attempt_id, attempt.forked_at, attempt.forked_at_step = parent.id, step.checkpoint_id, step.step
        attempt.inherited_rounds, attempt.fork_changes = len(values.get("rounds") or []), changes
        runner.write_artifacts(attempt)
        store.save_attempt(experiment_id, attempt, task_meta(task))
        card = None
        if config.score:
            card, events = runner.score_with_events(unit, attempt, store)
            store.save_score(experiment_id, attempt.id, card, events)
    finally:
        runner.close()
    log.info("fork.done", attempt=attempt.id, parent=parent.id, step=step.step, status=attempt.status.value,
             arm=attempt.arm_label, seed=attempt.seed)
    return ForkResult(attempt_id=attempt.id, parent_attempt_id=parent.id, experiment_id=experiment_id,
                      forked_at=step.checkpoint_id, forked_at_step=step.step, status=attempt.status.value,
                      rounds=len(attempt.rounds), inherited_rounds=attempt.inherited_rounds, changes=changes,
                      arm=attempt.arm_label, seed=attempt.seed, duration_s=attempt.duration_s,
                      scores={s.stage: s.value for s in card.stages} if card is not None else {}, notes=notes)

