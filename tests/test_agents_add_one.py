"""A new agent is one module: its graph, its registration and its control answers; nothing elsewhere changes.

The agent below (an outline first, then the model) is registered by this test module and runs end to end through
``sysmo run``'s machinery with ``mockllm/control``: the control script takes its answers from the registration.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sysmo.agents import registry
from sysmo.agents.control_script import default_answers, when
from sysmo.agents.stages import model_stage, with_scratch
from sysmo.agents.task_prompt import task_prompt_for
from sysmo.contracts.task import Task, TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.graphs.inline import runs_inline
from sysmo.graphs.loop import build_repair_graph
from sysmo.graphs.state import AgentState
from sysmo.llm.mockllm import MockAnswer

NAME = "outline_first"
OUTLINE = "Outline: one class per noun of the requirement."
TASK = "starter/uml_class/library_loans"


async def outline(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    task_text, _ = task_prompt_for(ctx, include_source=False, include_traces=False)
    messages = [{"role": "user", "content": "Outline the model for this task:\n" + task_text}]
    text, update = await model_stage(state, ctx, messages, purpose="outline")
    if text is not None:
        update["scratch"] = with_scratch(state, outline=text)
    return update


@runs_inline
def first_request(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    task_text, _ = task_prompt_for(ctx, include_source=False, include_traces=False)
    plan = (state.get("scratch") or {}).get("outline", "")
    return {"pending": [{"role": "user", "content": f"{task_text}\n\nFollow this outline:\n{plan}"}]}


def control_answers(task: Task) -> list[MockAnswer]:
    return [MockAnswer(text=OUTLINE, when=when(task, NAME, "outline", 0)), *default_answers(task, NAME)]


def build(ctx: AgentContext, checkpointer: Any = None):
    return build_repair_graph(first_request, pre_stages=[("outline", outline)], checkpointer=checkpointer)


@pytest.fixture
def outline_agent(tmp_path: Path, monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    registry.register_agent(NAME, supports={TaskKind.UML_CLASS}, description="An outline, then the model.",
                            control_answers=control_answers)(build)
    yield NAME
    registry.unregister_agent(NAME)


def test_registering_an_agent_rebuilds_the_control_script(tmp_path: Path, monkeypatch) -> None:
    """The starter control script, built before the agent exists, gains its answers when it registers and loses
    them when it goes: nothing to clear by hand."""
    from sysmo.agents.control_script import build_control_script

    def agents_answered() -> set[str]:
        return {a.when.agent for a in build_control_script().responses if a.when is not None}

    assert NAME not in agents_answered()
    with_outline = registry.register_agent(NAME, supports={TaskKind.UML_CLASS}, description="An outline.",
                                           control_answers=control_answers)
    with_outline(build)
    try:
        assert NAME in agents_answered()
    finally:
        registry.unregister_agent(NAME)
    assert NAME not in agents_answered()


def test_an_agent_registered_in_one_module_runs_end_to_end_with_the_control_model(
    outline_agent: str, tmp_path: Path
) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    config = ExperimentConfig(id="one", output_dir=tmp_path / "runs", agents=[outline_agent],
                              models=["mockllm/control"], samples=1, score=False, concurrency=1,
                              tasks=TaskSelection(benchmarks=["starter"], ids=[TASK]))
    summary = run_experiment(config, progress=False)

    store = Store(tmp_path / "runs" / "one" / "results.sqlite")
    try:
        [row] = store.query("SELECT id FROM attempts")
        attempt = store.attempt(row["id"])
    finally:
        store.close()
    assert summary.ran == 1 and attempt.agent == NAME
    assert attempt.status == "passed" and len(attempt.rounds) == 2  # the control's mistake, then its fix
    assert [c.purpose for c in attempt.rounds[0].llm_calls] == ["outline", "generate"]
    assert attempt.extras["outline"] == OUTLINE
    generate = next(e for e in attempt.events if getattr(e, "purpose", None) == "generate")
    assert generate.messages[-1]["content"].endswith("Follow this outline:\n" + OUTLINE)
