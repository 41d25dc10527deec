"""The bounded repair loop: [pre-stages] -> first_request -> generate -> check -> (generate -> check)* -> end.

Agents differ in how they build the first request (their pre-stages); the loop is shared. A round is two graph
steps: ``generate`` (the model call) and ``check`` (the tool, the round's record and, when the attempt goes on,
the next round's request). An agent with a repair step of its own (a reviewer's model call) gets it as a
separate ``repair`` node: check -> repair -> generate.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from sysmo.graphs import nodes
from sysmo.graphs.context import AgentContext
from sysmo.graphs.inline import is_inline, named_like, route_on_loop
from sysmo.graphs.state import AgentState

Node = Callable[[AgentState, AgentContext], Any]  # returns the update, or (model calls) a coroutine of it


def initial_state(ctx: AgentContext) -> AgentState:
    return AgentState(task_id=ctx.task.id, round_index=0, max_rounds=ctx.max_rounds, messages=[], pending=[],
                      rounds=[], status="running", error=None, scratch={}, llm_calls=[], steps=0,
                      round_started=time.monotonic(), tool_time_s=0.0, llm_time_s=0.0)


def with_context(fn: Node) -> Callable[[AgentState, Runtime[AgentContext]], Any]:
    """The node ``fn(state, ctx)`` reading the attempt's ``AgentContext`` from LangGraph's run-time context
    (``graph.ainvoke(..., context=ctx)``), so one compiled graph serves every attempt of an agent.

    Nodes that call a model are coroutines (awaited on the event loop), and so are the quick ones marked
    ``runs_inline``; the others, tool checks included, run in the loop's worker threads."""

    if inspect.iscoroutinefunction(fn):  # a model call: awaited on the event loop

        async def async_node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
            return await fn(state, runtime.context)  # type: ignore[misc]

        return named_like(async_node, fn)

    if is_inline(fn):  # quick: on the loop, no thread hop

        async def inline_node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
            return fn(state, runtime.context)

        return named_like(inline_node, fn)

    def node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        return fn(state, runtime.context)

    return named_like(node, fn)


def _stop_on_error(state: AgentState) -> str:
    return "end" if state.get("status") == "error" else "next"


def build_repair_graph(first_request: Node, pre_stages: list[tuple[str, Node]] | None = None,
                       checkpointer: Any = None, repair: Node | None = None):
    """Compile the loop. ``pre_stages`` run once, in order, before ``first_request`` builds ``pending``;
    ``repair`` replaces the shared repair (it must return what ``nodes.repair`` returns) and runs as a node of
    its own. The nodes take their ``AgentContext`` from the run: ``invoke(..., context=ctx)``."""
    graph = StateGraph(AgentState, context_schema=AgentContext)
    stop_on_error = route_on_loop(_stop_on_error)
    chain = [*(pre_stages or []), ("first_request", first_request)]
    for name, fn in chain:
        graph.add_node(name, with_context(fn))
    graph.add_node("generate", with_context(nodes.generate))
    graph.add_node("check", with_context(nodes.check if repair else nodes.check_and_request_repair))
    graph.add_edge(START, chain[0][0])
    for (name, _), (following, _) in zip(chain, chain[1:]):
        graph.add_conditional_edges(name, stop_on_error, {"end": END, "next": following})
    graph.add_conditional_edges(chain[-1][0], stop_on_error, {"end": END, "next": "generate"})
    graph.add_edge("generate", "check")
    if repair is None:
        graph.add_conditional_edges("check", route_on_loop(nodes.route_after_check), {"end": END, "next": "generate"})
    else:
        graph.add_node("repair", with_context(repair))
        graph.add_conditional_edges("check", route_on_loop(nodes.route_after_check), {"end": END, "next": "repair"})
        graph.add_conditional_edges("repair", stop_on_error, {"end": END, "next": "generate"})
    return graph.compile(checkpointer=checkpointer)
