"""Agents under bad conditions: malformed model output, rate limits, cached replays, unsupported tasks;
and what an attempt leaves behind (checkpoint history of every node, prompt hashes, `sysmo attempt`)."""

from __future__ import annotations

import json

from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from agent_scripts import ANALYSIS, DESIGN, fake_llm, model_reply, replies_for
from agent_tasks import lock_counter_task, task_of, text_task
from fake_openai import FakeOpenAI, http_error, reply, tool_reply
from sysmo.agents.registry import UnsupportedTaskError, get_agent
from sysmo.agents.run import run_attempt
from sysmo.contracts.task import TaskKind
from sysmo.contracts.attempt import AttemptStatus
from sysmo.graphs.checkpoint import history
from sysmo.graphs.context import AgentContext
from sysmo.tools.checkers import check_artifact
from typer.testing import CliRunner


# the TLA+ tests check the same LockCounter/spinlock specs again and again: each distinct SANY/TLC run is made
# once by the real tool, its repeats get the stored output (the agents' handling of it is what these pin)
pytestmark = pytest.mark.usefixtures("tla_run_cache")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server on 127.0.0.1, stopped after the test."""
    with FakeOpenAI() as fake:
        yield fake


def _attempt(
    agent: str,
    kind: TaskKind,
    server: FakeOpenAI,
    tmp_path: Path,
    *,
    cache: object = False,
    checkpoint_db: Path | None = None,
    attempt_id: str = "a1",
):
    task = task_of(kind, tmp_path)
    ctx = AgentContext(
        task=task,
        llm=fake_llm(server.base_url, cache=cache),
        checker=check_artifact,
        agent=agent,
        attempt_id=attempt_id,
    )
    return run_attempt(agent, ctx, model_name="openai/fake-model", checkpoint_db=checkpoint_db)


# --- malformed model output ----------------------------------------------------------------------
def test_reply_without_code_block_and_empty_reply_are_recorded_and_fed_back(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    reference = text_task(TaskKind.UML_CLASS).references.model
    server.push(
        reply("I would model this with a few classes and associations between them."),
        reply(""),
        model_reply("base_modeling", reference),
    )

    attempt = _attempt("base_modeling", TaskKind.UML_CLASS, server, tmp_path)

    assert attempt.status == AttemptStatus.PASSED
    no_block, empty, fixed = attempt.rounds
    assert no_block.check is None and "No PlantUML diagram found" in no_block.extraction_error
    assert empty.check is None and "empty" in empty.extraction_error
    assert fixed.passed
    assert "could not use your previous answer: No PlantUML diagram found" in server.last_user_message(1)
    assert "The reply was empty" in server.last_user_message(2)


def test_truncated_abstraction_plan_is_recorded_and_the_raw_reply_passed_on(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    task = lock_counter_task(tmp_path)
    truncated = '{"operators": [{"name": "Acquire", "role": "action"}, {"name": "Rel'
    draft = "```tla\n" + task.references.model.files["LockCounter.tla"] + "```"
    server.push(reply(draft), reply(truncated), model_reply("code_translation", task.references.model))
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="code_translation")

    attempt = run_attempt("code_translation", ctx, model_name="openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED
    assert attempt.extras["abstraction"] is None
    assert "not a valid abstraction plan" in attempt.extras["abstraction_error"]
    assert truncated in server.last_user_message(2)  # stage 3 still saw what stage 2 understood
    assert server.requests[1]["response_format"]["json_schema"]["name"] == "AbstractionPlan"
    assert [c.purpose for c in attempt.rounds[0].llm_calls] == ["translate", "abstract", "generate"]


def test_truncated_model_reply_is_checked_and_repaired(server: FakeOpenAI, tmp_path: Path) -> None:
    reference = text_task(TaskKind.UML_CLASS).references.model
    cut = reference.main_text[: len(reference.main_text) // 2]
    server.push(reply(f"```plantuml\n{cut}"), model_reply("base_modeling", reference))

    attempt = _attempt("base_modeling", TaskKind.UML_CLASS, server, tmp_path)

    assert attempt.status == AttemptStatus.PASSED
    assert any("not closed" in n for n in attempt.rounds[0].extraction_notes)
    assert attempt.rounds[0].check is not None and not attempt.rounds[0].passed


def test_openhands_malformed_tool_arguments_and_chat_replies_become_error_observations(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    reference = text_task(TaskKind.SYSML).references.model
    server.push(
        tool_reply({"name": "write_file", "arguments": '{"path": "model.sysml", "content": "package P {'}),
        reply("Here is the model: package P { part def A; }"),
        tool_reply(("read_file", {"path": "missing.sysml"}), ("finish", {})),
        model_reply("openhands", reference),
    )

    attempt = _attempt("openhands", TaskKind.SYSML, server, tmp_path)

    assert attempt.status == AttemptStatus.PASSED
    assert len(attempt.rounds) == 1  # one check of a written workspace
    errors = [e["error"] for e in attempt.extras["events"] if e["type"] == "observation" and e.get("error")]
    assert any("not valid JSON" in e for e in errors)
    assert any("No tool was called" in e for e in errors)
    assert "no file 'missing.sysml' in the workspace; it has: (none)" in errors
    assert "finish with an empty workspace" in errors
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "not valid JSON" in tool_messages[-1]["content"]


def test_openhands_hand_off_is_refused_while_the_check_fails(server: FakeOpenAI, tmp_path: Path) -> None:
    task = text_task(TaskKind.ARCHITECTURE)
    broken = task.references.model.main_text.replace("@enduml", "")
    server.push(
        tool_reply(("write_file", {"path": "diagram.puml", "content": broken}), ("finish", {})),
        model_reply("openhands", task.references.model),
    )

    attempt = _attempt("openhands", TaskKind.ARCHITECTURE, server, tmp_path)

    assert attempt.status == AttemptStatus.PASSED
    assert [r.passed for r in attempt.rounds] == [False, True]
    assert "hand-off is refused" in server.last_user_message(1)


def test_openhands_step_budget_ends_an_attempt_that_never_checks(server: FakeOpenAI, tmp_path: Path) -> None:
    server.push(*[reply("thinking ...") for _ in range(3)])
    task = text_task(TaskKind.UML_CLASS)
    ctx = AgentContext(
        task=task,
        llm=fake_llm(server.base_url),
        checker=check_artifact,
        agent="openhands",
        max_rounds=3,
        max_steps=3,
    )

    attempt = run_attempt("openhands", ctx, model_name="openai/fake-model")

    assert attempt.status == AttemptStatus.FAILED
    # the first reply carried no tool call: the next two were asked with the text protocol, with none either
    assert attempt.error == "the model made no tool call in 3 replies (native and text protocol)"
    assert server.calls == 3 and attempt.rounds == []


def test_metagpt_malformed_document_is_retried_once_then_recorded_and_the_sop_continues(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    task = text_task(TaskKind.SYSML)
    server.push(reply(""), reply('{"requirements": [{"text": "no id"}]}'), reply(DESIGN),
                model_reply("metagpt", task.references.model))

    attempt = _attempt("metagpt", TaskKind.SYSML, server, tmp_path)

    assert attempt.status == AttemptStatus.PASSED
    assert attempt.extras["errors"] == [
        "the Requirements Analyst's reply (try 1): the reply is empty",
        "the Requirements Analyst's reply (try 2): the RequirementsAnalysis document is invalid at "
        "requirements.0.id: Field required (1 errors)",
        "the Requirements Analyst gave no readable RequirementsAnalysis",
    ]
    retry = server.requests[1]["messages"]
    assert retry[-1]["content"].startswith("Your reply could not be read: the reply is empty.")
    assert "analyst" not in attempt.extras["documents"]
    assert attempt.extras["documents"]["architect"]["elements"][0]["satisfies"] == ["R1"]
    assert "(the analyst gave nothing)" in server.requests[2]["messages"][-1]["content"]
    assert [c.purpose for c in attempt.rounds[0].llm_calls] == ["analyst", "analyst", "architect", "generate"]


def test_metagpt_documents_are_typed_and_passed_rendered_to_the_next_role(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    task = text_task(TaskKind.SYSML)
    prose = "Here is the analysis:\n```json\n" + ANALYSIS + "\n```"
    server.push(reply(prose), reply(DESIGN), model_reply("metagpt", task.references.model))

    attempt = _attempt("metagpt", TaskKind.SYSML, server, tmp_path)

    from sysmo.agents.metagpt_documents import RequirementsAnalysis, SystemDesign

    analysis = RequirementsAnalysis.model_validate(attempt.extras["documents"]["analyst"])
    assert [r.id for r in analysis.requirements] == ["R1", "R2"]
    SystemDesign.model_validate(attempt.extras["documents"]["architect"])
    assert "RequirementsAnalysis" in server.requests[0]["messages"][-1]["content"]  # the schema is in the prompt
    architect_prompt = server.requests[1]["messages"][-1]["content"]
    assert "R2 [MUST] the relations between them" in architect_prompt
    modeler_prompt = server.requests[2]["messages"][-1]["content"]
    assert "- the elements of the requirement (part); satisfies R1" in modeler_prompt
    assert "errors" not in attempt.extras


def test_metagpt_reviewer_sees_the_tool_result_and_the_modeler_gets_the_review(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    task = text_task(TaskKind.SYSML)
    from sysmo.agents.control_script import broken_artifact

    server.push(*replies_for("metagpt", task, [broken_artifact(task), task.references.model]))

    attempt = _attempt("metagpt", TaskKind.SYSML, server, tmp_path)

    diagnostic = attempt.rounds[0].check.diagnostics[0].message
    review_request, repair_request = server.requests[3], server.requests[4]
    assert diagnostic in review_request["messages"][-1]["content"]
    from sysmo.agents.metagpt import CONTROL_REVIEW

    assert "The Reviewer's comments:\n" + CONTROL_REVIEW.render() in repair_request["messages"][-1]["content"]
    assert [c.purpose for c in attempt.rounds[1].llm_calls] == ["review", "repair"]
    assert attempt.extras["documents"]["analyst"]["requirements"][0]["id"] == "R1"
    [review] = attempt.extras["documents"]["reviewer"]  # the review of round 0's check
    assert review == {"round": 0, **CONTROL_REVIEW.model_dump()}


def test_provider_failure_ends_the_attempt_with_an_error_not_a_crash(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.push(http_error(400, "model does not support this request"))

    attempt = _attempt("base_modeling", TaskKind.SYSML, server, tmp_path)

    assert attempt.status == AttemptStatus.ERROR
    assert "model does not support this request" in attempt.error


# --- rate limits and the response cache ----------------------------------------------------------
def test_rate_limit_is_retried_and_a_second_run_is_answered_from_the_cache(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    task = text_task(TaskKind.UML_CLASS)
    cache = tmp_path / "llm_cache.sqlite"
    server.push(http_error(429, "slow down"), *replies_for("metagpt", task, [task.references.model]))

    first = _attempt("metagpt", TaskKind.UML_CLASS, server, tmp_path, cache=cache)
    calls_after_first = server.calls
    second = _attempt("metagpt", TaskKind.UML_CLASS, server, tmp_path, cache=cache)

    assert first.status == second.status == AttemptStatus.PASSED
    assert calls_after_first == 4  # the 429, then the three stages
    assert server.calls == calls_after_first  # zero HTTP calls the second time
    assert all(c.cached for r in second.rounds for c in r.llm_calls)
    assert not any(c.cached for r in first.rounds for c in r.llm_calls)
    assert second.final_artifact == first.final_artifact


# --- what an attempt records ---------------------------------------------------------------------
LOOP_ROUND = ["generate", "check"]


@pytest.mark.parametrize(
    ("agent", "kind", "expected"),
    [
        ("base_modeling", TaskKind.ARCHITECTURE, ["first_request", *LOOP_ROUND, *LOOP_ROUND]),  # check also
        # builds the repair request
        (
            "metagpt",  # its repair is a reviewer's model call: a node of its own
            TaskKind.ARCHITECTURE,
            ["analyst", "architect", "first_request", *LOOP_ROUND, "repair", *LOOP_ROUND],
        ),
        (
            "code_translation",  # its repair fills a task's own correction prompt when it has one: a node of its own
            TaskKind.TLA,
            ["translate", "check_translation", "abstract", "first_request", *LOOP_ROUND, "repair", *LOOP_ROUND],
        ),
        ("openhands", TaskKind.ARCHITECTURE, ["setup", "step", "act", "step", "act"]),
    ],
)
def test_checkpoint_history_lists_every_node_visit(
    agent: str, kind: TaskKind, expected: list[str], server: FakeOpenAI, tmp_path: Path
) -> None:
    from sysmo.agents.control_script import broken_artifact

    task = task_of(kind, tmp_path)
    server.push(*replies_for(agent, task, [broken_artifact(task), task.references.model]))
    db = tmp_path / "checkpoints.sqlite"

    attempt = _attempt(agent, kind, server, tmp_path, checkpoint_db=db, attempt_id="ck1")

    assert attempt.status == AttemptStatus.PASSED and attempt.checkpoint_db == str(db)
    steps = history(db, "ck1")
    assert [s.node for s in steps if s.node not in (None, "__start__")] == expected
    assert steps[-1].status == "passed"


def test_an_attempt_can_be_forked_from_a_stored_step(server: FakeOpenAI, tmp_path: Path) -> None:
    """Re-run an attempt from the checkpoint before its second model call, with another reply: a real LangGraph
    fork."""
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from sysmo.agents.control_script import broken_artifact
    from sysmo.graphs.checkpoint_texts import TextsSerializer
    from sysmo.agents.run import compiled_graph

    task = text_task(TaskKind.ARCHITECTURE)
    server.push(*replies_for("base_modeling", task, [broken_artifact(task), broken_artifact(task),
                                                     broken_artifact(task), broken_artifact(task)]))
    db = tmp_path / "checkpoints.sqlite"
    attempt = _attempt("base_modeling", TaskKind.ARCHITECTURE, server, tmp_path, checkpoint_db=db, attempt_id="f1")
    assert attempt.status == AttemptStatus.FAILED and len(attempt.rounds) == 4

    steps = history(db, "f1")
    # after round 0's check: its record is kept and the repair request is ready for round 1's model call
    before_round_1 = next(s for s in steps if s.next == ["generate"] and s.round_index == 1)
    server.push(*replies_for("base_modeling", task, [task.references.model]))
    ctx = AgentContext(task=task_of(TaskKind.ARCHITECTURE, tmp_path), llm=fake_llm(server.base_url, cache=False),
                       checker=check_artifact, agent="base_modeling", attempt_id="f1")

    async def fork_and_run() -> dict:
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            saver.serde = TextsSerializer(path=db)  # the file stores each long text once
            graph = compiled_graph(get_agent("base_modeling"), ctx).copy({"checkpointer": saver})
            fork = {"configurable": {"thread_id": "f1", "checkpoint_id": before_round_1.checkpoint_id}}
            return await graph.ainvoke(None, fork, context=ctx)

    final = asyncio.run(fork_and_run())
    assert final["status"] == "passed"
    assert [r["index"] for r in final["rounds"]] == [0, 1]  # the fork kept round 0 and replaced the rest


def test_one_checkpoint_file_keeps_the_steps_of_many_attempts(server: FakeOpenAI, tmp_path: Path) -> None:
    from sysmo.graphs.checkpoint import CheckpointStore

    task = text_task(TaskKind.UML_CLASS)
    with CheckpointStore(tmp_path / "checkpoints.sqlite") as store:
        for attempt_id in ("s1", "s2"):
            server.push(*replies_for("base_modeling", task, [task.references.model]))
            ctx = AgentContext(task=task_of(TaskKind.UML_CLASS, tmp_path), llm=fake_llm(server.base_url, cache=False),
                               checker=check_artifact, agent="base_modeling", attempt_id=attempt_id)
            attempt = run_attempt("base_modeling", ctx, model_name="openai/fake-model", checkpoints=store)
            assert attempt.status == AttemptStatus.PASSED and attempt.checkpoint_db == str(store.path)
        # the same attempt run again (after an interruption) replaces its steps instead of mixing two runs
        server.push(*replies_for("base_modeling", task, [task.references.model]))
        ctx = AgentContext(task=task_of(TaskKind.UML_CLASS, tmp_path), llm=fake_llm(server.base_url, cache=False),
                           checker=check_artifact, agent="base_modeling", attempt_id="s1")
        run_attempt("base_modeling", ctx, model_name="openai/fake-model", checkpoints=store)
    for attempt_id in ("s1", "s2"):
        nodes = [s.node for s in history(tmp_path / "checkpoints.sqlite", attempt_id) if s.node not in (None, "__start__")]
        assert nodes == ["first_request", *LOOP_ROUND]


def test_unsupported_tasks_are_rejected_with_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedTaskError, match="trace_learning.*does not support sysml.*supports: tla"):
        get_agent("trace_learning").check_supports(text_task(TaskKind.SYSML))
    no_source = lock_counter_task(tmp_path).model_copy(deep=True)
    no_source.inputs.source_files = {}
    with pytest.raises(UnsupportedTaskError, match="code_translation.*no source files"):
        get_agent("code_translation").check_supports(no_source)
    no_traces = lock_counter_task(tmp_path).model_copy(deep=True)
    no_traces.inputs.traces = None
    with pytest.raises(UnsupportedTaskError, match="traces"):
        get_agent("trace_learning").check_supports(no_traces)
    for kind in (TaskKind.SYSML, TaskKind.UML_CLASS, TaskKind.ARCHITECTURE):  # no code to translate: not offered
        with pytest.raises(UnsupportedTaskError, match=f"code_translation.*does not support {kind.value}"):
            get_agent("code_translation").check_supports(text_task(kind))


def test_trace_learning_prompt_has_traces_and_no_source(server: FakeOpenAI, tmp_path: Path) -> None:
    task = lock_counter_task(tmp_path)
    server.push(model_reply("trace_learning", task.references.model))
    ctx = AgentContext(
        task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="trace_learning"
    )

    attempt = run_attempt("trace_learning", ctx, model_name="openai/fake-model")

    prompt = server.last_user_message(0)
    assert attempt.status == AttemptStatus.PASSED
    assert '"event": "Acquire"' in prompt and "`Release` x2, fields: count, proc" in prompt
    assert "self.lock = threading.Lock()" not in prompt and "lock_counter.py" not in prompt


def test_code_translation_sends_the_statement_by_statement_draft_to_stage_two(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    task = lock_counter_task(tmp_path)
    draft = "---- MODULE LockCounter ----\n\\* from lock_counter.py:work\nVARIABLE pc\n===="
    plan = '{"operators": [{"name": "work", "role": "action"}], "state_variables": ["pc"]}'
    server.push(reply(f"```tla\n{draft}\n```"), reply(plan), model_reply("code_translation", task.references.model))
    ctx = AgentContext(
        task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="code_translation"
    )

    attempt = run_attempt("code_translation", ctx, model_name="openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED
    assert "self.lock = threading.Lock()" in server.last_user_message(0)  # stage 1 reads the code
    assert draft in server.last_user_message(1) and "Stage 2 of 3" in server.last_user_message(1)
    assert "Stage 3 of 3" in server.last_user_message(2) and draft in server.last_user_message(2)
    assert '"name": "work"' in server.last_user_message(2)  # the plan, as stage 2 gave it
    assert attempt.extras["draft"].strip() == draft and attempt.extras["abstraction"]["operators"][0]["name"] == "work"
    # stage 1.a: SANY parsed the translation (no Init yet, but a module SANY accepts), and stage 2 is told
    assert attempt.extras["draft_check"]["tool"].startswith("sany")
    assert "Syntax check of the translated spec: SANY parses the translated spec." in server.last_user_message(1)
    assert [c.purpose for c in attempt.rounds[0].llm_calls] == ["translate", "abstract", "generate"]
    # each stage's prompt and reply is in the attempt's events, as every pre-stage's is
    from sysmo.contracts.events import LLMCallEvent

    calls = {e.purpose: e for e in attempt.events if isinstance(e, LLMCallEvent)}
    assert "self.lock = threading.Lock()" in calls["translate"].messages[-1]["content"]
    assert draft in calls["translate"].response["text"] and plan in calls["abstract"].response["text"]
    assert "Stage 2 of 3" in calls["abstract"].messages[-1]["content"]


def test_code_translation_hands_sanys_verdict_on_the_translation_to_the_next_stages(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    task = lock_counter_task(tmp_path)
    draft = "---- MODULE LockCounter ----\nVARIABLE pc\nInit == pc = undeclared\n===="
    plan = '{"operators": [{"name": "Init", "role": "action"}]}'
    server.push(reply(f"```tla\n{draft}\n```"), reply(plan), model_reply("code_translation", task.references.model))
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="code_translation")

    attempt = run_attempt("code_translation", ctx, model_name="openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED
    assert attempt.extras["draft_check"]["outcome"] == "failed"
    for stage in (1, 2):  # the abstraction and the restructuring are both told what SANY found
        prompt = server.last_user_message(stage)
        assert "SANY rejects the translated spec (failed):" in prompt and "undeclared" in prompt


# --- the command ---------------------------------------------------------------------------------
def test_sysmo_attempt_runs_one_attempt_and_prints_its_rounds() -> None:
    from sysmo.cli.agents import register

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    result = CliRunner().invoke(
        app,
        [
            "attempt",
            "--task",
            "starter/uml_class/recipe_book",
            "--agent",
            "openhands",
            "--model",
            "mockllm/control",
            "--no-cache",
        ],
        env={"COLUMNS": "160"},
    )

    assert result.exit_code == 0, result.output
    assert "round 0" in result.output and "round 1" in result.output
    assert "passed after 2 round(s)" in result.output and "CONTROL" in result.output


def test_sysmo_attempt_sends_the_per_sample_seed_a_run_would_send(server: FakeOpenAI, tmp_path: Path) -> None:
    """The seed of (task, sample) under ``--seed``, derived as a run's attempts derive theirs: the server gets it."""
    from sysmo.benchmarks.registry import get_task
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.cli.agents import register
    from sysmo.runner.config import ExperimentConfig
    from sysmo.runner.units import expand

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    task = get_task("starter/uml_class/library_loans")
    server.push(*replies_for("base_modeling", task, [task.references.model]))
    out = tmp_path / "attempt.json"
    result = CliRunner().invoke(app, ["attempt", "--task", task.id, "--agent", "base_modeling", "--model",
                                      "openai/fake-seed", "--api-base", server.base_url, "--sample", "2", "--seed",
                                      "7", "--no-cache", "--json", str(out)], env={"COLUMNS": "160"})

    assert result.exit_code == 0, result.output
    config = ExperimentConfig(agents=["base_modeling"], models=["openai/fake-seed"], samples=3, seed=7,
                              tasks=TaskSelection(benchmarks=["starter"], ids=[task.id]))
    (run_unit,) = [u for u in expand(config, [task], "exp")[0] if u.sample == 2]
    assert [r["seed"] for r in server.requests] == [run_unit.seed]
    assert json.loads(out.read_text())["seed"] == run_unit.seed
    assert f"2 / {run_unit.seed}" in result.output


def test_sysmo_trace_shows_metagpt_documents(server: FakeOpenAI, tmp_path: Path) -> None:
    from rich.console import Console
    from sysmo.evals.trace_view import render_attempt

    task = text_task(TaskKind.SYSML)
    server.push(reply(ANALYSIS), reply(DESIGN), model_reply("metagpt", task.references.model))
    attempt = _attempt("metagpt", TaskKind.SYSML, server, tmp_path)

    console = Console(record=True, width=160)
    render_attempt(attempt, None, console, full=True)
    text = console.export_text()
    assert "document: analyst" in text and "document: architect" in text
    assert '"text": "the relations between them"' in text
