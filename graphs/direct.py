"""The plain repair loop walked node by node without LangGraph: for replays of published outputs.

A replayed reply is a published text, verbatim: the attempt is ``first_request -> generate -> check`` (then
``generate -> check`` again while the source has rounds left), with no checkpoints to keep. Walked here, each
node is the same function ``graphs.loop.build_repair_graph`` makes a graph node of, on the same state, its
update applied as the graph's channels apply it (``rounds`` appended, every other key replaced) and a
``GraphStepEvent`` emitted per node as ``agents.run.drive`` does; the walk costs a few function calls where a
LangGraph run costs its channels, tasks and writes (about 85 ms of an attempt's 90 on a loaded machine), and
needs no import of LangGraph. The attempt record is the one the graph run gives (``tests/test_replay_direct.py``
compares both on published predictions).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from sysmo.contracts.events import GraphStepEvent, emit
from sysmo.graphs import nodes
from sysmo.graphs.context import AgentContext
from sysmo.graphs.inline import is_inline

Node = Callable[[dict[str, Any], AgentContext], Any]
MAX_STEPS = 400  # as the graph's recursion limit (agents.run.RECURSION_LIMIT): the loop is bounded by max_rounds


def _apply(state: dict[str, Any], update: dict[str, Any] | None) -> None:
    for key, value in (update or {}).items():
        state[key] = state.get(key, []) + value if key == "rounds" else value


async def _run(fn: Node, state: dict[str, Any], ctx: AgentContext) -> dict[str, Any] | None:
    """The node's update: a coroutine awaited, a quick node on the loop, any other (a tool check) in a worker
    thread, as the graph runs them."""
    if inspect.iscoroutinefunction(fn):
        return await fn(state, ctx)
    if is_inline(fn):
        return fn(state, ctx)
    return await asyncio.to_thread(fn, dict(state), ctx)


async def walk_repair_loop(first_request: Node, state: dict[str, Any], ctx: AgentContext) -> dict[str, Any]:
    """Run the plain repair loop (``build_repair_graph(first_request)``: no pre-stages, the shared repair) from
    ``state`` to its end; the final state: ``state`` itself, updated in place after every node (a caller that
    stops the walk keeps the rounds that finished)."""
    step = 0

    async def node(name: str, fn: Node) -> None:
        nonlocal step
        update = await _run(fn, state, ctx)
        emit(GraphStepEvent(step=step, node=name, keys=sorted(update) if isinstance(update, dict) else []))
        step += 1
        _apply(state, update)

    await node("first_request", first_request)
    if state.get("status") == "error":
        return state
    while step < MAX_STEPS:
        await node("generate", nodes.generate)
        await node("check", nodes.check_and_request_repair)
        if nodes.route_after_check(state) == "end":  # type: ignore[arg-type]
            break
    return state
