"""The openhands agent on any model: native tool calls (``tools=``) or the text protocol (fenced ``tool`` JSON
blocks, results fed back as plain text), picked by the role's ``tool_calling`` option, litellm's model map or a
first reply without a tool call; the mode recorded in the attempt, ``sysmo trace`` and the report's notes; a model
that never calls a tool ends saying so."""

from __future__ import annotations

import re

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from agent_scripts import fake_llm
from agent_tasks import text_task
from fake_openai import FakeOpenAI, FakeReply, reply, tool_reply
from rich.console import Console
from sysmo.agents.run import run_attempt
from sysmo.agents.text_tools import parse_tool_blocks
from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.contracts.task import TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.llm import LLM, ModelRoles, RoleConfig
from sysmo.llm.tool_calling import start_mode
from sysmo.tools.checkers import check_artifact

KIND = TaskKind.UML_CLASS
# litellm's model map knows this OpenAI model and marks it without function calling
NO_FUNCTION_CALLING = "openai/gpt-3.5-turbo-16k"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _diagram() -> tuple[str, str]:
    """The task's reference diagram, and a broken copy of it (no @enduml: PlantUML rejects it)."""
    good = text_task(KIND).references.model.main_text
    return good, good.replace("@enduml", "")


def _tool_block(name: str, arguments: dict[str, Any]) -> str:
    return "```tool\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```\n"


def _native_script() -> list[FakeReply]:
    good, broken = _diagram()
    return [tool_reply(("write_file", {"path": "diagram.puml", "content": broken}), ("run_check", {})),
            tool_reply(("edit_file", {"path": "diagram.puml", "old_text": broken, "new_text": good}),
                       ("run_check", {}))]


def _text_script() -> list[FakeReply]:
    """The same calls as ``_native_script``, as tool blocks in the replies' text."""
    good, broken = _diagram()
    return [reply("I write the diagram, then check it.\n" + _tool_block("write_file", {"path": "diagram.puml",
                                                                                      "content": broken})
                  + _tool_block("run_check", {})),
            reply(_tool_block("edit_file", {"path": "diagram.puml", "old_text": broken, "new_text": good})
                  + "and check again:\n" + _tool_block("run_check", {}))]


def _attempt(llm: LLM, model: str, **ctx: Any) -> Attempt:
    context = AgentContext(task=text_task(KIND), llm=llm, checker=check_artifact, agent="openhands", **ctx)
    return run_attempt("openhands", context, model_name=model)


@pytest.mark.parametrize(
    ("tool_calling", "script", "mode", "reason"),
    [("native", _native_script, "native", "role option tool_calling: native"),
     ("text", _text_script, "text", "role option tool_calling: text"),
     ("auto", _native_script, "native", "openai/fake-model is not in litellm's model map"),
     ("auto", lambda: [reply("```plantuml\n" + _diagram()[0] + "\n```"), *_text_script()], "text",
      "the first reply carried no native tool call (offered natively: openai/fake-model is not in litellm's model "
      "map)")],
    ids=["native", "text", "auto-native", "auto-falls-back-to-text"],
)
def test_the_same_task_is_solved_with_native_tool_calls_and_with_the_text_protocol(
    server: FakeOpenAI, tool_calling: str, script: Any, mode: str, reason: str
) -> None:
    """Write a broken diagram and check it (PlantUML rejects it), fix it with an edit and check again: the same
    calls, as native tool calls or as fenced JSON blocks, give the same rounds and the same workspace."""
    server.push(*script())

    attempt = _attempt(fake_llm(server.base_url, tool_calling=tool_calling), "openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    assert [r.passed for r in attempt.rounds] == [False, True]
    assert attempt.final_artifact.files == {"diagram.puml": _diagram()[0]}
    assert attempt.extras["tool_mode"] == mode and reason in attempt.extras["tool_mode_reason"]
    offered = ["tools" in body for body in server.requests]
    tool_messages = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    if mode == "native":
        assert offered == [True, True] and len(tool_messages) == 2  # the two observations of the first reply
        assert attempt.extras["tool_mode_replies"] == {"native": 2, "text": 0}
        return
    fell_back = tool_calling == "auto"
    assert offered == [fell_back] + [False] * (len(server.requests) - 1) and tool_messages == []
    assert attempt.extras["tool_mode_replies"] == {"native": int(fell_back), "text": 2}
    last = server.requests[-1]["messages"]
    # the results come back as one plain user message per reply, in the order of the calls
    assert last[-1]["role"] == "user" and last[-1]["content"].startswith(
        "Result of tool call 1 (write_file):\nWrote diagram.puml")
    assert "Result of tool call 2 (run_check):" in last[-1]["content"] and "@enduml" in last[-1]["content"]
    protocol_in = last[0]["content"] if not fell_back else last[3]["content"]  # the system prompt, or the note
    assert "```tool" in protocol_in and '{"name": "edit_file", "arguments":' in protocol_in
    # the action's text is the reply's prose, its calls those of the blocks
    actions = [e for e in attempt.extras["events"] if e["type"] == "action"]
    assert actions[-2]["text"] == "I write the diagram, then check it."
    assert [c["name"] for c in actions[-2]["tool_calls"]] == ["write_file", "run_check"]


def test_a_model_litellm_marks_without_function_calling_gets_the_text_protocol_from_its_first_request(
    server: FakeOpenAI,
) -> None:
    server.push(*_text_script())
    config = RoleConfig(model=NO_FUNCTION_CALLING, api_base=server.base_url, max_retries=0, timeout_s=30)

    attempt = _attempt(LLM(ModelRoles(generator=config), cache=False), NO_FUNCTION_CALLING)

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    assert all("tools" not in body for body in server.requests) and len(server.requests) == 2
    assert "```tool" in server.requests[0]["messages"][0]["content"]  # the protocol is in the system prompt
    assert attempt.extras["tool_mode"] == "text"
    assert attempt.extras["tool_mode_reason"] == (f"litellm's model map: {NO_FUNCTION_CALLING} has no native "
                                                  "function calling")
    assert "openhands/text_protocol" in attempt.prompt_hashes


@pytest.mark.parametrize(
    ("config", "mode", "fallback", "reason"),
    [(RoleConfig(model=NO_FUNCTION_CALLING), "text", False, "has no native function calling"),
     (RoleConfig(model=f"langchain:{NO_FUNCTION_CALLING}"), "text", False, "has no native function calling"),
     (RoleConfig(model="openai/gpt-4o-mini"), "native", True, "openai/gpt-4o-mini has native function calling"),
     (RoleConfig(model="openai/qwen2.5-coder-32b"), "native", True, "is not in litellm's model map"),
     (RoleConfig(model="langchain:my_models:chat"), "native", True, "langchain:my_models:chat is not in"),
     (RoleConfig(model="gpt-4o-mini", tool_calling="text"), "text", False, "role option tool_calling: text"),
     (RoleConfig(model=NO_FUNCTION_CALLING, tool_calling="native"), "native", False, "tool_calling: native"),
     (RoleConfig(model="mockllm/control"), "native", False, "offline control")],
)
def test_the_first_mode_follows_the_role_option_then_litellm_s_model_map(
    config: RoleConfig, mode: str, fallback: bool, reason: str
) -> None:
    start = start_mode(config)
    assert (start.mode, start.fallback) == (mode, fallback) and reason in start.reason


@pytest.mark.parametrize(("tool_calling", "modes", "offered"),
                         [("auto", "native and text protocol", [True, False, False]),
                          ("text", "text protocol", [False, False, False]),
                          ("native", "native tool calling", [True, True, True])])
def test_a_model_that_answers_a_diagram_and_never_calls_a_tool_ends_saying_so(
    server: FakeOpenAI, tool_calling: str, modes: str, offered: list[bool]
) -> None:
    server.push(*[reply("Here is the diagram:\n```plantuml\n" + _diagram()[0] + "\n```") for _ in range(3)])

    attempt = _attempt(fake_llm(server.base_url, tool_calling=tool_calling), "openai/fake-model", max_steps=3)

    assert attempt.status == AttemptStatus.FAILED and attempt.rounds == []
    assert attempt.error == f"the model made no tool call in 3 replies ({modes})"
    assert ["tools" in body for body in server.requests] == offered


def test_a_langchain_model_runs_the_text_protocol_without_binding_tools(server: FakeOpenAI) -> None:
    server.push(*_text_script())
    config = RoleConfig(model="langchain:openai/fake-model", api_base=server.base_url, tool_calling="text",
                        max_retries=0, timeout_s=30)

    attempt = _attempt(LLM(ModelRoles(generator=config), cache=False), config.model)

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    assert [r.passed for r in attempt.rounds] == [False, True] and attempt.extras["tool_mode"] == "text"
    assert all("tools" not in body and "tool_choice" not in body for body in server.requests)
    assert server.requests[1]["messages"][-1]["content"].startswith("Result of tool call 1 (write_file):")


# --- the parser ----------------------------------------------------------------------------------
def test_tool_blocks_are_read_in_order_with_fences_and_raw_newlines_inside_their_strings() -> None:
    content = "line one\n```\nnot the end of the block\n```\n"
    text = ("Two calls.\n```tool\n" + json.dumps({"name": "write_file", "arguments": {"path": "a.puml",
                                                                                     "content": content}})
            + "\n```\nthen\n~~~~tool_call\n"
            + '[{"name": "read_file", "arguments": {"path": "a.puml"}}, {"name": "run_check"}]\n~~~~\n'
            + '```tool\n{"name": "write_file", "arguments": {"path": "b.puml", "content": "raw\nnewline"}}\n```')

    calls, prose = parse_tool_blocks(text, id_prefix="s1")

    assert [(c.id, c.name, c.error) for c in calls] == [("s1_0", "write_file", None), ("s1_1", "read_file", None),
                                                         ("s1_2", "run_check", None), ("s1_3", "write_file", None)]
    assert calls[0].arguments["content"] == content and calls[3].arguments["content"] == "raw\nnewline"
    assert prose == "Two calls.\n\nthen"


def test_an_unreadable_tool_block_is_a_call_with_an_error_fed_back_to_the_model(server: FakeOpenAI) -> None:
    calls, _ = parse_tool_blocks('```tool\n{"name": "write_file", "arguments": {"path": \n```\n'
                                 '```tool\n{"arguments": {}}\n```')
    assert [c.name for c in calls] == ["(unreadable)", "(unreadable)"]
    assert calls[0].error.startswith("the tool block is not valid JSON") and "name" in calls[1].error

    server.push(reply('```tool\n{"name": "write_file", "arguments": {"path": "x"\n```'), *_text_script())
    attempt = _attempt(fake_llm(server.base_url, tool_calling="text"), "openai/fake-model")

    assert attempt.status == AttemptStatus.PASSED, attempt.error
    fed_back = server.requests[1]["messages"][-1]["content"]
    assert fed_back.startswith("Result of tool call 1 ((unreadable)):\nError: the tool block is not valid JSON")
    assert "Write the block again" in fed_back


# --- the record: sysmo trace and the report -------------------------------------------------------
def answer_by_mode(body: dict[str, Any]) -> FakeReply:
    """A server for two models: native tool calls when tools are offered, else the same calls as tool blocks."""
    good = text_task(KIND).references.model.main_text
    if "tools" in body:
        return tool_reply(("write_file", {"path": "diagram.puml", "content": good}), ("run_check", {}))
    return reply(_tool_block("write_file", {"path": "diagram.puml", "content": good}) + _tool_block("run_check", {}))


def test_the_report_and_the_trace_say_which_mode_each_model_ran_in(tmp_path: Path) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.evals.report import write_report
    from sysmo.evals.trace_view import render_attempt
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    with FakeOpenAI(default=answer_by_mode) as fake:
        config = ExperimentConfig(
            id="modes", output_dir=tmp_path, agents=["openhands"], samples=1, concurrency=1, checkpoints="none",
            models=[{"model": "openai/fake-model", "api_base": fake.base_url},
                    {"model": NO_FUNCTION_CALLING, "api_base": fake.base_url, "price_per_mtok": [0, 0]}],
            tasks=TaskSelection(benchmarks=["starter"], ids=[text_task(KIND).id]))
        run_experiment(config, progress=False)

    paths = write_report(tmp_path / "modes")
    report = paths["markdown"].read_text()
    assert ("tool calling of openhands on openai/fake-model: native tool calls in 1 of 1 attempts" in report)
    assert f"tool calling of openhands on {NO_FUNCTION_CALLING}: the text protocol in 1 of 1 attempts" in report
    # every attempt's mode in attempts.csv, and the pass rate by mode, since the two models ran in different ones
    exported = pd.read_csv(paths["attempts_csv"]).set_index("model")
    assert exported["tool_mode"].to_dict() == {"openai/fake-model": "native", NO_FUNCTION_CALLING: "text"}
    assert pd.read_parquet(paths["attempts_parquet"])["tool_mode"].tolist() == exported["tool_mode"].tolist()
    breakdown = report.split("## Pass rate by tool_mode\n\n", 1)[1].split("\n\n", 1)[0]
    assert breakdown.splitlines()[0] == "| agent | model | tool_mode=native | tool_mode=text |"
    assert f"| openhands | {NO_FUNCTION_CALLING} | — | 1.000 |" in breakdown
    assert "| openhands | openai/fake-model | 1.000 | — |" in breakdown
    assert "- tool_mode=LEVEL: share of the group's attempts whose tool calls travelled in mode LEVEL" in report
    assert "<h2>Pass rate by tool_mode</h2>" in paths["html"].read_text()
    # sysmo view's report page shows the same breakdown, the same numbers
    from starlette.testclient import TestClient

    from sysmo.view.app import create_app

    page = TestClient(create_app(tmp_path), base_url="http://127.0.0.1").get("/e/modes/report")
    assert page.status_code == 200 and 'id="breakdown-tool_mode"' in page.text
    shown = page.text.split('id="breakdown-tool_mode"', 1)[1].split("</table>", 1)[0]
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[dh][^>]*>.*?</t[dh]>", shown)]
    assert cells[:4] == ["agent", "model", "tool_mode=native", "tool_mode=text"]
    assert [cells[4:8], cells[8:12]] == [["openhands", "openai/fake-model", "1.000", "—"],
                                         ["openhands", NO_FUNCTION_CALLING, "—", "1.000"]]
    store = Store(tmp_path / "modes" / "results.sqlite")
    try:
        attempts = {a.model: a for a in store.attempts("modes")}
    finally:
        store.close()
    assert {m: a.status for m, a in attempts.items()} == {"openai/fake-model": AttemptStatus.PASSED,
                                                         NO_FUNCTION_CALLING: AttemptStatus.PASSED}
    console = Console(record=True, width=200)
    render_attempt(attempts[NO_FUNCTION_CALLING], None, console)
    shown = console.export_text()
    assert "tool calling" in shown
    assert (f"text (litellm's model map: {NO_FUNCTION_CALLING} has no native function calling); replies: text 1"
            in shown)


def test_sysmo_run_tool_calling_text_offers_no_tools_and_a_resume_may_not_change_it(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    """``--tool-calling text`` sets the generators' role option: no request carries ``tools=``, the attempt ran the
    text protocol; only one mode ran, so the report has no breakdown by mode; ``--resume`` with another mode is
    refused naming the flag."""
    from sysmo_cli import run_sysmo

    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    runs = tmp_path / "runs"
    with FakeOpenAI(default=answer_by_mode) as fake:
        done = run_sysmo("run", "-a", "openhands", "-m", "openai/fake-model", "--api-base", fake.base_url,
                         "--tool-calling", "text", "-b", "starter", "--ids", text_task(KIND).id, "-n", "1",
                         "--checkpoints", "none", "--no-progress", "--id", "textmode", "-o", str(runs))
        bodies = list(fake.requests)
        refused = run_sysmo("run", "--resume", "textmode", "--tool-calling", "native", "-o", str(runs))
        same = run_sysmo("run", "--resume", "textmode", "--tool-calling", "text", "--no-progress", "--no-report",
                         "-o", str(runs))
    assert done.code == 0, done.output
    assert bodies and all("tools" not in body and "tool_choice" not in body for body in bodies)
    assert "```tool" in bodies[0]["messages"][0]["content"]  # the text protocol, from the first request
    attempts = pd.read_csv(runs / "textmode" / "report" / "attempts.csv")
    assert attempts["tool_mode"].tolist() == ["text"] and attempts["status"].tolist() == ["passed"]
    report = (runs / "textmode" / "report" / "report.md").read_text()
    assert "tool calling of openhands on openai/fake-model: the text protocol in 1 of 1 attempts" in report
    assert "Pass rate by tool_mode" not in report  # one mode: nothing to break down

    assert refused.code == 2 and "cannot change --tool-calling" in " ".join(refused.stderr.split())
    assert same.code == 0, same.output  # the same mode again: nothing changes, nothing is left to run
    assert len(fake.requests) == len(bodies)  # the attempt was stored: no call asked again
    wrong = run_sysmo("run", "--tool-calling", "json", "-o", str(runs))
    assert wrong.code == 2 and "--tool-calling must be auto, native or text, not 'json'" in wrong.stderr
