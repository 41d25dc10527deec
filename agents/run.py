"""Run one attempt: build the agent's graph, drive it to the end, return the ``Attempt`` record."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
import threading
import uuid
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sysmo.agents.registry import AgentSpec, get_agent
from sysmo.contracts.events import ErrorEvent, EventLog, GraphStepEvent, ToolCallEvent, collecting, emit
from sysmo.errors import NotCoveredError, SysmoError
from sysmo.contracts.attempt import Attempt, AttemptStatus, Round
from sysmo.graphs.checkpoint import CheckpointStore, StepRecorder, StepRouter
from sysmo.graphs.context import AgentContext, attempt_clock
from sysmo.graphs.live import round_finished
from sysmo.graphs.loop import initial_state
from sysmo.llm.roles import is_control_model, model_kind
from sysmo.log import get_logger

log = get_logger(__name__)

RECURSION_LIMIT = 400  # graph steps; the loop itself is bounded by max_rounds, this only stops runaways

_COMPILED: dict[tuple, Any] = {}
_COMPILED_LOCK = threading.Lock()


STEPS = StepRouter()  # the checkpointer of every recorded attempt of this process (each to its own recorder)


def compiled_graph(spec: AgentSpec, ctx: AgentContext, *, recorded: bool = False) -> Any:
    """The agent's compiled graph for this context's variant, compiled once per process and shared by every
    attempt (the nodes read ``ctx`` from the run's context). With ``recorded`` its checkpointer is ``STEPS``,
    which sends each attempt's steps to the recorder registered for it (``STEPS.recording``)."""
    key = (spec, spec.variant_of(ctx))
    with _COMPILED_LOCK:
        graph = _COMPILED.get(key)
        if graph is None:
            graph = _COMPILED[key] = spec.build(ctx, checkpointer=None)
        if not recorded:
            return graph
        with_steps = _COMPILED.get((*key, "steps"))
        if with_steps is None:
            with_steps = _COMPILED[(*key, "steps")] = graph.copy({"checkpointer": STEPS})
        return with_steps


def recording_checker(checker: Any) -> Any:
    """``checker`` that also emits a ``ToolCallEvent`` for every check into the current event log."""

    def check(artifact: Any, task: Any) -> Any:
        try:
            result = checker(artifact, task)
        except SysmoError as exc:
            emit(ErrorEvent(where="tool", error_type=type(exc).__name__, message=str(exc)))
            raise
        isolation = result.details.get("isolation")
        emit(ToolCallEvent(tool=result.tool, tool_version=result.tool_version, input_hash=artifact.sha256,
                           outcome=str(result.outcome.value), duration_s=result.duration_s,
                           diagnostics=[d.model_dump(mode="json") for d in result.diagnostics],
                           isolation=",".join(isolation) if isinstance(isolation, list)
                           else (str(isolation) if isolation else None)))
        return result

    return check


class AttemptTimeLimit(SysmoError):
    """The attempt ran past its wall-clock limit (``--attempt-timeout``): a harness-side stop, not a verdict."""

    error_class = "AttemptTimeLimit"


def time_limit_message(limit_s: float, running: list[str], rounds: int) -> str:
    """What a stopped attempt records: the limit, the graph step it stopped in, and what was kept."""
    where = f"graph step {', '.join(repr(n) for n in running)}" if running else "between graph steps"
    return (f"attempt wall-clock limit of {limit_s:g} s (--attempt-timeout) reached in {where}; the "
            f"{rounds} round(s) finished before it are kept")


async def drive(graph: Any, state: dict[str, Any] | None, config: dict[str, Any], ctx: AgentContext, *,
                values: dict[str, Any] | None = None, final: dict[str, Any] | None = None,
                running: set[str] | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run the graph to its end, emitting a ``GraphStepEvent`` per node that ran; returns the final state.

    Only the nodes' updates are streamed; the final state is the input with each update applied as the graph's
    channels apply it (a reducer channel's operator, else the last value). Streaming the values as well made
    LangGraph read every channel into a new dict after every step. With ``state`` None the graph resumes the
    checkpoint ``config`` names (a fork), whose ``values`` the updates are applied to. ``final`` (updated in
    place) holds the state so far and ``running`` the nodes started and not finished, for a caller that stops the
    graph mid-way; the task events that keep ``running`` carry references to the state, not copies."""
    channels = graph.channels
    start = values if values is not None else state or {}
    final = dict(start) if final is None else final
    final.update(start)
    running = set() if running is None else running
    step = 0
    async for mode, chunk in graph.astream(state, config, context=ctx, stream_mode=["updates", "tasks"], **kwargs):
        if mode == "tasks":  # a node starting ("input") or done ("result")
            name = str(chunk.get("name", ""))
            (running.discard if "result" in chunk else running.add)(name)
            continue
        for node, update in (chunk or {}).items():
            emit(GraphStepEvent(step=step, node=str(node), keys=sorted(update) if isinstance(update, dict) else []))
            step += 1
            for key, value in (update.items() if isinstance(update, dict) else ()):
                if key not in channels:
                    continue
                reduce = getattr(channels[key], "operator", None)  # BinaryOperatorAggregate: rounds
                final[key] = reduce(final[key], value) if reduce is not None and key in final else value
            if isinstance(update, dict) and "rounds" in update:
                round_finished(final.get("rounds") or [])  # for `sysmo view`, when the runner publishes
    return final


async def drive_within(graph: Any, state: dict[str, Any] | None, config: dict[str, Any], ctx: AgentContext,
                       **kwargs: Any) -> dict[str, Any]:
    """``drive`` stopped after ``ctx.time_limit_s`` seconds of wall clock: then ``AttemptTimeLimit`` names the
    step it stopped in, and the state so far (every round that finished) is the attempt's, in its exception."""
    final: dict[str, Any] = {}
    running: set[str] = set()
    try:
        with attempt_clock() as over:
            try:
                async with asyncio.timeout(ctx.time_limit_s):
                    return await drive(graph, state, config, ctx, final=final, running=running, **kwargs)
            except TimeoutError:
                over.set()  # a node left running in a worker thread stops at its next step
                raise
    except TimeoutError as exc:
        stopped = AttemptTimeLimit(time_limit_message(ctx.time_limit_s or 0, sorted(running),
                                                      len(final.get("rounds") or [])))
        stopped.state = final  # type: ignore[attr-defined]
        raise stopped from exc


async def walk_within(first_request: Any, state: dict[str, Any], ctx: AgentContext) -> dict[str, Any]:
    """The plain repair loop walked without LangGraph (``graphs.direct``), stopped as ``drive_within`` stops a
    graph run: after ``ctx.time_limit_s`` seconds, with the rounds that finished."""
    from sysmo.graphs.direct import walk_repair_loop

    final = dict(state)
    try:
        async with asyncio.timeout(ctx.time_limit_s):
            return await walk_repair_loop(first_request, final, ctx)
    except TimeoutError as exc:
        stopped = AttemptTimeLimit(time_limit_message(ctx.time_limit_s or 0, [], len(final.get("rounds") or [])))
        stopped.state = final  # type: ignore[attr-defined]
        raise stopped from exc


def _final_status(status: str | None) -> AttemptStatus:
    """The attempt's status once its graph has ended: one still running (or unknown) when it stopped failed."""
    done = {AttemptStatus.PASSED.value, AttemptStatus.FAILED.value, AttemptStatus.ERROR.value,
            AttemptStatus.NOT_COVERED.value}
    return AttemptStatus(status) if status in done else AttemptStatus.FAILED


def run_attempt(agent: str, ctx: AgentContext, *, model_name: str, checkpoint_db: Path | None = None,
                checkpoints: CheckpointStore | None = None) -> Attempt:
    """Run ``agent`` on ``ctx.task`` to the end (its own event loop); never raises for model/tool failures
    (they end up in the Attempt). From a running event loop, await ``arun_attempt`` instead.

    With ``checkpoints`` (an open store, shared by many attempts) or ``checkpoint_db`` (a file opened for this
    attempt), every step's LangGraph checkpoint is kept there under thread id ``ctx.attempt_id``."""
    if checkpoints is None and checkpoint_db is not None:
        with CheckpointStore(checkpoint_db) as store:
            return asyncio.run(arun_attempt(agent, ctx, model_name=model_name, checkpoints=store))
    return asyncio.run(arun_attempt(agent, ctx, model_name=model_name, checkpoints=checkpoints))


async def arun_attempt(agent: str, ctx: AgentContext, *, model_name: str,
                       checkpoints: CheckpointStore | None = None) -> Attempt:
    """``run_attempt`` on the caller's event loop: model calls are awaited there, tool checks run in the loop's
    worker threads (bounded by the checker's own tool slots). The steps are written to ``checkpoints`` before
    it returns, also when the attempt failed."""
    steps = checkpoints.recorder() if checkpoints is not None else None
    try:
        return await arun_attempt_steps(agent, ctx, model_name=model_name, steps=steps)
    finally:  # also the steps of a failed attempt, to see where it went wrong
        if checkpoints is not None and steps is not None:
            await asyncio.to_thread(checkpoints.save, steps, ctx.attempt_id)


def _private_workspace() -> Path:
    """A fresh, unguessable directory name under the temporary directory (created by the agent if it works
    on files, so an attempt of another agent costs nothing)."""
    return Path(tempfile.gettempdir()) / f"sysmo-workspace-{uuid.uuid4().hex}"


GraphRun = Callable[[AgentSpec, AgentContext, dict[str, Any]], Awaitable[dict[str, Any]]]


async def arun_attempt_steps(agent: str, ctx: AgentContext, *, model_name: str,
                             steps: StepRecorder | None = None, run_graph: GraphRun | None = None,
                             checkpoint_db: Path | None = None) -> Attempt:
    """The attempt, with every step checkpointed in ``steps`` (in memory) for the caller to write to their
    destination (``CheckpointStore.save``). The local runner writes them off the attempt's critical path,
    before the attempt's record, so a stored attempt always has its steps.

    ``run_graph(spec, ctx, config)`` replaces the run of the agent's graph from its initial state (a fork
    resumes a stored checkpoint, its steps going to ``checkpoint_db``); it returns the final state."""
    spec = get_agent(agent)
    spec.check_supports(ctx.task)
    attempt = Attempt(id=ctx.attempt_id, task_id=ctx.task.id, agent=agent, model=model_name,
                      sample_index=ctx.sample_index, max_rounds=ctx.max_rounds, feedback=ctx.feedback,
                      strategy=ctx.strategy, temperature=ctx.temperature, arm=dict(ctx.arm), seed=ctx.seed,
                      time_limit_s=ctx.time_limit_s,
                      is_control=is_control_model(model_name), kind=model_kind(model_name),
                      checkpoint_db=str(steps.destination) if steps is not None and steps.destination
                      else (str(checkpoint_db) if checkpoint_db is not None else None))
    started = time.monotonic()
    config = {"configurable": {"thread_id": ctx.attempt_id}, "recursion_limit": RECURSION_LIMIT}
    final: dict[str, Any] = {}
    timed_out: str | None = None
    events = EventLog()
    # the agent's in-loop check (the tool check, then its own), each check recorded; same prompt_hashes dict
    private_workspace = ctx.workspace_dir is None
    ctx = dataclasses.replace(ctx, checker=spec.in_loop_check(ctx.checker, recording_checker),
                              workspace_dir=_private_workspace() if private_workspace else ctx.workspace_dir)
    with collecting(events, stage="attempt"):
        try:
            if run_graph is not None:
                final = await run_graph(spec, ctx, config)
            elif steps is None and spec.plain_loop is not None and model_kind(model_name) == "replay":
                final = await walk_within(spec.plain_loop, initial_state(ctx), ctx)  # published replies, verbatim
            elif steps is not None:
                with STEPS.recording(ctx.attempt_id, steps):
                    final = await drive_within(compiled_graph(spec, ctx, recorded=True), initial_state(ctx), config,
                                                ctx, durability="sync")
            else:
                final = await drive_within(compiled_graph(spec, ctx), initial_state(ctx), config, ctx)
        except AttemptTimeLimit as exc:  # what finished before the limit stays the attempt's
            final = exc.state  # type: ignore[attr-defined]
            timed_out = str(exc)
            emit(ErrorEvent(where="attempt", error_type=exc.error_class, message=timed_out))
            log.warning("attempt.time_limit", attempt=ctx.attempt_id, error=timed_out)
        except NotCoveredError as exc:  # a replay source without this task (raised before the first round)
            attempt.status = AttemptStatus.NOT_COVERED
            attempt.error = str(exc)
        except SysmoError as exc:
            attempt.status = AttemptStatus.ERROR
            attempt.error = str(exc)
            emit(ErrorEvent(where="attempt", error_type=getattr(exc, "error_class", None) or type(exc).__name__,
                            message=str(exc)))
            log.warning("attempt.error", attempt=ctx.attempt_id, error=str(exc))
        finally:
            if private_workspace and ctx.workspace_dir is not None:
                shutil.rmtree(ctx.workspace_dir, ignore_errors=True)
    attempt.duration_s = time.monotonic() - started
    attempt.prompt_hashes = dict(ctx.prompt_hashes)
    if final:
        attempt.rounds = [Round.model_validate(r) for r in final.get("rounds") or []]
        attempt.status = _final_status(final.get("status"))
        attempt.error = final.get("error")
        attempt.extras = dict(final.get("scratch") or {})
        with_artifact = [r for r in attempt.rounds if r.artifact is not None]
        if with_artifact:
            attempt.final_artifact = with_artifact[-1].artifact
        for rnd in attempt.rounds:
            if rnd.check is not None:
                attempt.tool_versions[rnd.check.tool] = rnd.check.tool_version
        if final.get("error") and not any(isinstance(e, ErrorEvent) for e in events.events):
            events.add(ErrorEvent(where="graph", error_type="AttemptError", message=str(final["error"])))
    if timed_out is not None:  # whatever the rounds so far said, the attempt did not run to its end
        attempt.status = AttemptStatus.ERROR
        attempt.error = timed_out
    attempt.events = events.events
    attempt.settle_calls()  # every answered call counts, also those no round holds (openhands steps)
    log.info("attempt.finalized", attempt=ctx.attempt_id, task=ctx.task.id, status=attempt.status.value,
             rounds=len(attempt.rounds))
    return attempt
