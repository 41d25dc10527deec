"""Where nodes run under the asyncio executor: model calls and quick nodes on the event loop, the rest (tool
checks) in worker threads, so a tool never blocks the loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from sysmo.graphs.inline import is_inline, runs_inline
from sysmo.graphs.loop import with_context


class State(TypedDict, total=False):
    threads: dict[str, str]


def test_quick_nodes_and_model_calls_run_on_the_loop_and_tool_checks_in_worker_threads() -> None:
    seen: dict[str, str] = {}

    async def model_call(state: State, ctx: Any) -> dict[str, Any]:
        seen["model_call"] = threading.current_thread().name
        return {}

    @runs_inline
    def quick(state: State, ctx: Any) -> dict[str, Any]:
        seen["quick"] = threading.current_thread().name
        assert ctx == "the attempt's context"
        return {}

    def tool_check(state: State, ctx: Any) -> dict[str, Any]:
        seen["tool_check"] = threading.current_thread().name
        return {}

    assert is_inline(quick) and not is_inline(tool_check)
    graph = StateGraph(State, context_schema=str)
    for fn in (model_call, quick, tool_check):
        node = with_context(fn)
        assert node.__name__ == fn.__name__
        graph.add_node(fn.__name__, node)
    graph.add_edge(START, "model_call")
    graph.add_edge("model_call", "quick")
    graph.add_edge("quick", "tool_check")
    graph.add_edge("tool_check", END)
    compiled = graph.compile()

    async def run() -> str:
        await compiled.ainvoke({}, context="the attempt's context")
        return threading.current_thread().name

    loop_thread = asyncio.run(run())
    assert seen["model_call"] == seen["quick"] == loop_thread
    assert seen["tool_check"] != loop_thread


def test_the_shared_nodes_that_only_build_messages_are_marked_quick() -> None:
    from sysmo.agents import base_modeling, code_translation, metagpt, openhands, trace_learning
    from sysmo.graphs import nodes

    assert all(is_inline(fn) for fn in (nodes.repair, base_modeling.first_request,
                                         metagpt.modeler_request, code_translation.first_request, openhands.setup))
    # these touch tools or read trace files: worker threads
    assert not any(is_inline(fn) for fn in (nodes.check, openhands.act, trace_learning.survey,
                                             trace_learning.first_request))
