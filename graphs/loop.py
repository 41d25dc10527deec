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
from langgraph.types import Command
from sysmo.graphs import nodes
from sysmo.graphs.context import AgentContext
from sysmo.graphs.inline import is_inline, named_like
from sysmo.graphs.state import AgentState

Node = Callable[[AgentState, AgentContext], Any]  # returns the update, or (model calls) a coroutine of it
Route = Callable[[AgentState], str]  # a routing decision read off the state: a label of the node's ``Edges``


def initial_state(ctx: AgentContext) -> AgentState:
    return AgentState(task_id=ctx.task.id, round_index=0, max_rounds=ctx.max_rounds, messages=[], pending=[],
                      rounds=[], status="running", error=None, scratch={}, llm_calls=[], steps=0,
                      round_started=time.monotonic(), tool_time_s=0.0, llm_time_s=0.0)


class Edges:
    """Where the graph goes after a node: ``route`` reads the state with the node's update applied and
    returns a label of ``targets`` (label -> node name, or ``END``)."""

    def __init__(self, route: Route, targets: dict[str, str]) -> None:
        self.route = route
        self.targets = targets

    def after(self, state: AgentState, update: dict[str, Any] | None) -> Command:
        """The node's update, with the next node: LangGraph applies both in the node's own step."""
        label = self.route({**state, **(update or {})})  # type: ignore[typeddict-item]
        return Command(update=update, goto=self.targets[label])

    @property
    def destinations(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.targets.values()))


def with_context(fn: Node, edges: Edges | None = None) -> Callable[[AgentState, Runtime[AgentContext]], Any]:
    """The node ``fn(state, ctx)`` reading the attempt's ``AgentContext`` from LangGraph's run-time context
    (``graph.ainvoke(..., context=ctx)``), so one compiled graph serves every attempt of an agent.

    Nodes that call a model are coroutines (awaited on the event loop), and so are the quick ones marked
    ``runs_inline``; the others, tool checks included, run in the loop's worker threads.

    With ``edges``, the node also decides where the graph goes next (it returns a ``Command``): no conditional
    edge, whose routing function LangGraph would run as a step of its own, on a fresh copy of every channel."""

    def finish(state: AgentState, update: Any) -> Any:
        return edges.after(state, update) if edges is not None else update

    if inspect.iscoroutinefunction(fn):  # a model call: awaited on the event loop

        async def async_node(state: AgentState, runtime: Runtime[AgentContext]) -> Any:
            return finish(state, await fn(state, runtime.context))  # type: ignore[misc]

        return named_like(async_node, fn)

    if is_inline(fn):  # quick: on the loop, no thread hop

        async def inline_node(state: AgentState, runtime: Runtime[AgentContext]) -> Any:
            return finish(state, fn(state, runtime.context))

        return named_like(inline_node, fn)

    def node(state: AgentState, runtime: Runtime[AgentContext]) -> Any:
        return finish(state, fn(state, runtime.context))

    return named_like(node, fn)


def add_node(graph: StateGraph, name: str, fn: Node, edges: Edges | None = None) -> None:
    """``fn`` as node ``name``; with ``edges``, it routes itself (see ``with_context``)."""
    if edges is None:
        graph.add_node(name, with_context(fn))
    else:
        graph.add_node(name, with_context(fn, edges), destinations=edges.destinations)


def _stop_on_error(state: AgentState) -> str:
    return "end" if state.get("status") == "error" else "next"


def build_repair_graph(first_request: Node, pre_stages: list[tuple[str, Node]] | None = None,
                       checkpointer: Any = None, repair: Node | None = None):
    """Compile the loop. ``pre_stages`` run once, in order, before ``first_request`` builds ``pending``;
    ``repair`` replaces the shared repair (it must return what ``nodes.repair`` returns) and runs as a node of
    its own. The nodes take their ``AgentContext`` from the run: ``invoke(..., context=ctx)``."""
    graph = StateGraph(AgentState, context_schema=AgentContext)
    chain = [*(pre_stages or []), ("first_request", first_request)]
    for (name, fn), (following, _) in zip(chain, [*chain[1:], ("generate", None)]):
        add_node(graph, name, fn, Edges(_stop_on_error, {"end": END, "next": following}))
    graph.add_edge(START, chain[0][0])
    graph.add_node("generate", with_context(nodes.generate))
    graph.add_edge("generate", "check")
    if repair is None:
        add_node(graph, "check", nodes.check_and_request_repair,
                 Edges(nodes.route_after_check, {"end": END, "next": "generate"}))
    else:
        add_node(graph, "check", nodes.check, Edges(nodes.route_after_check, {"end": END, "next": "repair"}))
        add_node(graph, "repair", repair, Edges(_stop_on_error, {"end": END, "next": "generate"}))
    return graph.compile(checkpointer=checkpointer)
