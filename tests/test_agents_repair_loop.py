"""Every agent, on a task of each kind it supports, driven by a fake OpenAI server, checked by the real tools:
a wrong model is repaired from the tool's real diagnostics, and a model that is never fixed stops the attempt
after exactly three repair rounds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_scripts import fake_llm, replies_for
from agent_tasks import task_of
from fake_openai import FakeOpenAI
from sysmo.agents.control_script import broken_artifact
from sysmo.agents.registry import all_agents
from sysmo.agents.run import run_attempt
from sysmo.contracts.task import TaskKind
from sysmo.contracts.attempt import AttemptStatus
from sysmo.graphs.context import AgentContext
from sysmo.tools.checkers import check_artifact
from sysmo.contracts.check import Outcome

# what the real tools say about the mistakes broken_artifact makes (a dropped `;`/`}`, no @enduml, ...)
TOOL_MESSAGES = {
    TaskKind.TLA: ("Unknown operator", "Parse error", "Encountered"),
    TaskKind.SYSML: ("missing ';'", "expected '}'"),
    TaskKind.UML_CLASS: ("@enduml", "is not closed"),
    TaskKind.ARCHITECTURE: ("@enduml", "is not closed"),
}
# the same broken spec is checked again each round by every agent: SANY parses each distinct text once
pytestmark = pytest.mark.usefixtures("tla_run_cache")


PAIRS = [
    pytest.param(spec.name, kind, id=f"{spec.name}-{kind.value}")
    for spec in all_agents()
    for kind in TaskKind
    if kind in spec.supports
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server on 127.0.0.1, stopped after the test."""
    with FakeOpenAI() as fake:
        yield fake


def _run(agent: str, kind: TaskKind, server: FakeOpenAI, folder: Path, fixed_after: int | None):
    task = task_of(kind, folder)
    reference, broken = task.references.model, broken_artifact(task)
    models = [broken, reference] if fixed_after is not None else [broken] * 4
    server.push(*replies_for(agent, task, models))
    ctx = AgentContext(
        task=task,
        llm=fake_llm(server.base_url),
        checker=check_artifact,
        agent=agent,
        attempt_id=f"{agent}-{kind.value}",
        max_rounds=3,
    )
    return task, run_attempt(agent, ctx, model_name="openai/fake-model")


def test_every_paradigm_is_registered_with_the_kinds_it_supports() -> None:
    supports = {spec.name: {k.value for k in spec.supports} for spec in all_agents()}
    assert supports == {
        "base_modeling": {"tla", "sysml", "uml_class", "architecture"},
        "code_translation": {"tla"},  # code to translate: TLA+ tasks only
        "metagpt": {"tla", "sysml", "uml_class", "architecture"},
        "openhands": {"tla", "sysml", "uml_class", "architecture"},
        "trace_learning": {"tla"},
    }


@pytest.mark.parametrize(("agent", "kind"), PAIRS)
def test_wrong_model_is_repaired_from_the_tools_real_diagnostics(
    agent: str, kind: TaskKind, server: FakeOpenAI, tmp_path: Path
) -> None:
    _, attempt = _run(agent, kind, server, tmp_path, fixed_after=1)

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    assert [r.index for r in attempt.rounds] == [0, 1]
    first, second = attempt.rounds
    assert first.check is not None and first.check.outcome == Outcome.FAILED
    assert second.passed
    diagnostic = first.check.diagnostics[0].message
    assert any(m in diagnostic for m in TOOL_MESSAGES[kind]), diagnostic
    # the request that produced the fix carried the tool's own words, and the round records that request
    assert diagnostic in json.dumps(server.requests[-1]["messages"])
    assert diagnostic in json.dumps(second.messages)
    assert server.pending == 0
    # the prompt files used are hashed into the attempt: the agent's own and the task template of the kind
    assert all(len(h) == 64 for h in attempt.prompt_hashes.values())
    assert f"common/task_{kind.value}" in attempt.prompt_hashes
    assert any(key.startswith(f"{agent}/") for key in attempt.prompt_hashes), attempt.prompt_hashes


@pytest.mark.parametrize(("agent", "kind"), PAIRS)
def test_model_never_fixed_stops_after_exactly_three_repair_rounds(
    agent: str, kind: TaskKind, server: FakeOpenAI, tmp_path: Path
) -> None:
    _, attempt = _run(agent, kind, server, tmp_path, fixed_after=None)

    assert attempt.status == AttemptStatus.FAILED, attempt.error
    assert attempt.repair_rounds == 3
    assert [r.kind for r in attempt.rounds] == ["generate", "repair", "repair", "repair"]
    assert all(r.check is not None and r.check.outcome == Outcome.FAILED for r in attempt.rounds)
    assert server.pending == 0  # every scripted reply used, and no call beyond the budget
    assert server.calls == len(server.requests)


@pytest.mark.parametrize("feedback", ["diagnostics", "bare"])
def test_a_reply_cut_at_the_token_limit_is_named_in_the_repair_request(
    feedback: str, server: FakeOpenAI, tmp_path: Path
) -> None:
    """A reply that ended at the output token limit (finish_reason "length", an open model capped at a few hundred
    tokens) is recorded as cut, and the repair request says so before the tool's diagnostics of the cut model;
    bare feedback says only that the check failed."""
    from fake_openai import reply
    from sysmo.graphs.repair import CUT_AT_TOKEN_LIMIT

    task = task_of(TaskKind.UML_CLASS, tmp_path)
    whole = task.references.model.main_text
    cut = "```plantuml\n" + whole[: len(whole) // 2]  # the fence never closed: the reply stopped mid-model
    server.push(reply(cut, finish_reason="length"), reply(f"```plantuml\n{whole}\n```"))
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="base_modeling",
                       attempt_id=f"cut-{feedback}", max_rounds=1, feedback=feedback)
    attempt = run_attempt("base_modeling", ctx, model_name="openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    first, second = attempt.rounds
    assert CUT_AT_TOKEN_LIMIT in first.extraction_notes and CUT_AT_TOKEN_LIMIT not in second.extraction_notes
    request = server.requests[-1]["messages"][-1]["content"]
    said = request.startswith("Your previous answer stopped at the output token limit")
    assert said == (feedback == "diagnostics"), request


def test_an_inconclusive_check_is_no_pass_and_the_repair_request_says_to_bound_the_state_space(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    """TLC cannot build an initial state set of 20^20 functions (its enumeration limit): the round's check is
    inconclusive, the attempt goes on, and the model is told to make the state space finite."""
    from sysmo.contracts.artifact import Artifact
    from sysmo.graphs.repair import INCONCLUSIVE_ADVICE

    task = task_of(TaskKind.TLA, tmp_path)
    reference = task.references.model
    main = reference.main_file
    huge = reference.files[main].replace("Init == locked = FALSE", "Init == locked \\in [1..20 -> 1..20]")
    assert huge != reference.files[main]
    unfinished = Artifact(language=reference.language, files={**reference.files, main: huge})
    server.push(*replies_for("base_modeling", task, [unfinished, reference]))
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="base_modeling",
                       attempt_id="inconclusive", max_rounds=3)
    attempt = run_attempt("base_modeling", ctx, model_name="openai/fake-model")

    first, second = attempt.rounds
    assert first.check is not None and first.check.outcome == Outcome.INCONCLUSIVE
    assert not first.passed and second.passed
    assert attempt.status == AttemptStatus.PASSED and attempt.repair_rounds == 1
    assert INCONCLUSIVE_ADVICE in server.requests[-1]["messages"][-1]["content"]
