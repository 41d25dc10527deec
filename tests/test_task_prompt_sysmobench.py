"""The first request of each agent on SysMoBench tasks carries the task's own prompt, filled as its harness fills it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sysmo.agents.registry import get_agent
from sysmo.agents.run import run_attempt
from sysmo.agents.task_prompt import fill_harness, task_prompt
from sysmo.benchmarks import sysmobench
from sysmo.contracts.task import Task
from sysmo.graphs.context import AgentContext
from sysmo.llm import LLM, ModelRoles
from sysmo.runner import ExperimentConfig, expand, missing_inputs
from sysmo.tools.checkers import check_artifact


@pytest.fixture(scope="module")
def tasks(shared_benchmarks: Path) -> dict[str, Task]:
    return {t.id: t for t in sysmobench.load(shared_benchmarks / "sysmobench")}


def _block(prompt: str, heading: str) -> list[str]:
    """The non-empty lines of the task prompt's section that starts at ``heading``, up to the next blank line."""
    section = prompt.split(heading, 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in section.splitlines() if line.strip()]


def _sent_prompt(agent: str, task: Task) -> str:
    ctx = AgentContext(task=task, llm=LLM(ModelRoles(generator="reference"), cache=False), checker=check_artifact,
                       agent=agent, attempt_id=f"{agent}:{task.id}")
    attempt = run_attempt(agent, ctx, model_name="reference")
    return "\n".join(m["content"] for m in attempt.rounds[0].messages if m["role"] == "user")


def test_base_modeling_sends_spin_core_actions_exclusions_and_cfg_requirements(tasks: dict[str, Task]) -> None:
    task = tasks["sysmobench/spin"]
    harness = task.inputs.prompts["direct_call"]
    sent = _sent_prompt("base_modeling", task)

    core = _block(harness, "MANDATORY CORE ACTIONS (must include all):")
    excluded = _block(harness, "EXPLICITLY EXCLUDED (do not model):")
    assert len(core) >= 6 and len(excluded) >= 5
    for line in core + excluded:
        assert line in sent
    assert "【Busy-Wait Loop】spin_loop()" in sent and "Arc-based locking (lock_arc method)" in sent
    # placeholders filled as the harness's task loader fills them
    assert "Focus: Spinlock implementation with atomic operations" in sent
    assert "Source Code from ostd/src/sync/spin.rs:" in sent
    assert not re.search(r"\{(focus|file_path|source_code)\}", sent)
    # the missing source is said, with the reason
    assert "source code not available: no checkout of https://github.com/asterinas/asterinas.git" in sent
    # cfg requirements of the task's own phase2_config prompt and every invariant template
    assert "Use small values for constants" in sent and "```cfg" in sent
    for template in task.references.invariants:
        assert f"- {template.name} ({template.type})" in sent


def test_trace_learning_sends_trace_based_prompt_with_executions_and_format(tasks: dict[str, Task]) -> None:
    task = tasks["sysmobench/dqueue"]
    sent = _sent_prompt("trace_learning", task)
    for line in _block(task.inputs.prompts["trace_based"], "MANDATORY CORE ACTIONS"):
        assert line in sent
    runs = {f.parent for f in task.inputs.traces.files}
    assert all(f"## Execution #{i}:" in sent for i in range(1, len(runs) + 1))
    assert task.inputs.trace_format.strip()[:200] in sent
    assert "{traces}" not in sent and "{trace_format}" not in sent


def test_source_is_concatenated_as_the_harness_does(tasks: dict[str, Task]) -> None:
    task = tasks["sysmobench/spin"].model_copy(deep=True)
    task.inputs.source_files = {"ostd/src/sync/spin.rs": "pub struct SpinLock { lock: AtomicBool }"}
    text, template = task_prompt(task)
    assert ("===== FILE: ostd/src/sync/spin.rs =====\nDESCRIPTION: Spinlock implementation with atomic operations\n"
            "pub struct SpinLock { lock: AtomicBool }") in text
    assert "not available" not in text
    assert template.name == "direct_call" and template.agent == "sysmobench/spin"


def test_fill_follows_str_format_and_keeps_unknown_fields() -> None:
    assert fill_harness("{{x}} {a} {b}", {"a": "1"}) == "{x} 1 {b}"
    assert fill_harness("{{x}} {a}", {"a": "1"}) == "{{x}} {a}".format(a="1")


def test_run_summary_names_agents_working_without_source(tasks: dict[str, Task]) -> None:
    config = ExperimentConfig.control().model_copy(update={"agents": ["base_modeling", "trace_learning"]})
    units, _ = expand(config, [tasks["sysmobench/spin"]], "exp")
    notes = missing_inputs(units)
    assert notes == [
        ("agent 'base_modeling' models sysmobench/spin without the system's source code: no checkout of "
         "https://github.com/asterinas/asterinas.git was given (--sources-dir or source_checkouts in the config)")
    ]
    with_source = tasks["sysmobench/spin"].model_copy(deep=True)
    with_source.inputs.source_files = {"ostd/src/sync/spin.rs": "fn lock() {}"}
    assert get_agent("base_modeling").missing_inputs(with_source) == []


BROKEN_SPIN = "```tla\n---- MODULE spin ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == x' = y + 1\n====\n```\n"


def test_code_translation_repairs_with_the_tasks_correction_prompt(tasks: dict[str, Task]) -> None:
    from sysmo.llm.mockllm import MockAnswer, MockScript

    task = tasks["sysmobench/spin"].model_copy(deep=True)
    task.inputs.source_files = {"ostd/src/sync/spin.rs": "pub struct SpinLock { lock: AtomicBool }"}
    script = MockScript(mode="repeat_last", responses=[MockAnswer(text=BROKEN_SPIN)])
    llm = LLM({"generator": "mockllm/gen"}, cache=False, scripts={"gen": script})
    ctx = AgentContext(task=task, llm=llm, checker=check_artifact, agent="code_translation",
                       attempt_id="code_translation:spin", max_rounds=2)
    attempt = run_attempt("code_translation", ctx, model_name="mockllm/gen")
    assert [r.kind for r in attempt.rounds].count("repair") >= 1
    repair = next(r for r in attempt.rounds if r.kind == "repair").messages[-1]["content"]
    assert "I need you to fix errors in a TLA+ specification for a spinlock concurrent system." in repair
    assert "This is correction attempt 1 of 1." in repair
    assert "Next == x' = y + 1" in repair  # the previous spec, in the template's place
    assert "Unknown operator: `y'" in repair or "y" in repair.split("Detailed Syntax Errors:")[1][:400]
    assert "lock(): blocking call that can spin" in repair and "```cfg code block" in repair
    assert "{current_specification}" not in repair and "{error_summary}" not in repair
