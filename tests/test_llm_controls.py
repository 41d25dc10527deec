"""The offline providers: ``mockllm/<script>`` answers in script order, ``reference`` returns the gold model;
both are labelled as controls in every response and record."""

from __future__ import annotations

import asyncio
import json
import textwrap

import pytest
from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskReferences
from sysmo.errors import ConfigError, LLMError, UnknownNameError
from sysmo.llm import LLM, CallContext, LLMCallRecord, MockScript, ModelRoles, RoleConfig, format_reference

USER = [{"role": "user", "content": "Model the spinlock."}]

SPIN_TLA = "---- MODULE Spin ----\nVARIABLE lock\nInit == lock = 0\nNext == lock' = 1 - lock\n===="
SPIN_CFG = "INIT Init\nNEXT Next"
TLA_TASK = Task(
    id="starter/tla/spin",
    benchmark="starter",
    kind="tla",
    references=TaskReferences(
        model=Artifact(language="tla", files={"Spin.tla": SPIN_TLA, "Spin.cfg": SPIN_CFG})
    ),
)


def test_mockllm_answers_in_script_order_then_repeats_the_last(tmp_path):
    script = tmp_path / "two_rounds.yaml"
    script.write_text(
        textwrap.dedent("""\
        responses:
          - "```tla\\n---- MODULE Broken ----\\n```"
          - text: "```tla\\n---- MODULE Fixed ----\\n====\\n```"
        """)
    )
    records: list[LLMCallRecord] = []
    llm = LLM(
        RoleConfig(model="mockllm/two_rounds", script=script),
        cache=tmp_path / "c.sqlite",
        on_call=records.append,
    )
    texts = [llm.complete(USER).text for _ in range(3)]
    assert texts[0].startswith("```tla\n---- MODULE Broken") and "Fixed" in texts[1] and texts[2] == texts[1]
    for record in records:
        assert record.provider == "mockllm" and record.is_control and record.model == "mockllm/two_rounds"
        assert record.response.is_control and record.response.cost_usd == 0.0
        assert "offline control" in record.response.cost_note and not record.cached


def test_mockllm_script_is_found_by_name_in_the_mock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SYSMO_MOCKLLM_DIR", str(tmp_path))
    (tmp_path / "demo.json").write_text(json.dumps({"mode": "cycle", "responses": ["a", "b"]}))
    llm = LLM("mockllm/demo", cache=False)
    assert [llm.complete(USER).text for _ in range(3)] == ["a", "b", "a"]


def test_mockllm_answers_keyed_by_task_round_role_and_last_user_message(tmp_path):
    script = MockScript.model_validate(
        {
            "mode": "strict",
            "responses": [
                {"when": {"task": "t1", "round": 2}, "text": "t1 round 2"},
                {"when": {"task": "t1"}, "text": "t1 any round"},
                {"when": {"last_user": r"Diagnostics:.*line 3"}, "text": "repair from diagnostics"},
                {"when": {"role": "judge"}, "text": "score: 5"},
            ],
        }
    )
    llm = LLM(
        ModelRoles(generator="mockllm/keyed", judge="mockllm/keyed"), cache=False, scripts={"keyed": script}
    )
    assert llm.complete(USER, context=CallContext(task_id="t1", round=2)).text == "t1 round 2"
    assert llm.complete(USER, context=CallContext(task_id="t1", round=1)).text == "t1 any round"
    repair = [{"role": "user", "content": "Diagnostics:\nSANY: line 3, column 1: parse error"}]
    assert llm.complete(repair, context=CallContext(task_id="t2")).text == "repair from diagnostics"
    assert llm.complete(USER, role="judge").text == "score: 5"
    with pytest.raises(LLMError, match="ran out"):  # strict: every matching answer was used
        llm.complete(USER, context=CallContext(task_id="t1", round=2))
    with pytest.raises(LLMError, match="no scripted answer matches"):
        llm.complete(USER, context=CallContext(task_id="t9"))


def test_mockllm_tool_calls_and_scripted_errors(tmp_path):
    script = MockScript(
        responses=[
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "A.puml", "content": "@startuml\n@enduml"}}
                ]
            },
            {"error": "provider down"},
        ]
    )
    llm = LLM("mockllm/tools", cache=False, scripts={"tools": script})
    [call] = llm.complete(USER).tool_calls
    assert call.name == "write_file" and call.arguments["path"] == "A.puml"
    with pytest.raises(LLMError, match="scripted error: provider down"):
        llm.complete(USER)


def test_mockllm_is_never_cached_so_script_edits_take_effect(tmp_path):
    cache = tmp_path / "c.sqlite"
    first = LLM("mockllm/x", cache=cache, scripts={"x": MockScript(responses=["old"])}).complete(USER)
    second = LLM("mockllm/x", cache=cache, scripts={"x": MockScript(responses=["new"])}).complete(USER)
    assert (first.text, second.text, second.cached) == ("old", "new", False)


def test_unknown_mockllm_script_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("SYSMO_MOCKLLM_DIR", str(tmp_path))
    with pytest.raises(UnknownNameError, match="no script for mockllm/nope"):
        LLM("mockllm/nope", cache=False).complete(USER)
    assert LLM("mockllm/default", cache=False).complete(USER).text.startswith("Default output")


def test_reference_returns_the_task_model_as_tla_and_cfg_blocks():
    llm = LLM("reference", cache=False)
    response = asyncio.run(llm.acomplete(USER, context=CallContext(task=TLA_TASK, round=1)))
    assert response.provider == "reference" and response.is_control and response.model == "reference"
    assert response.text == format_reference(TLA_TASK.references.model)
    assert response.text.index("File: Spin.tla\n```tla\n---- MODULE Spin") < response.text.index(
        "File: Spin.cfg\n```cfg\nINIT Init\nNEXT Next\n```"
    )


def test_reference_formats_plantuml_and_sysml_with_their_fence_tags():
    puml = Artifact(language="plantuml", files={"model.puml": "@startuml\nclass A\n@enduml"})
    sysml = Artifact(language="sysml", files={"model.sysml": "package P { part def A; }"})
    assert format_reference(puml) == "File: model.puml\n```plantuml\n@startuml\nclass A\n@enduml\n```\n"
    assert "```sysml\npackage P { part def A; }\n```" in format_reference(sysml)


def test_reference_answers_a_tool_calling_agent_with_write_file_then_finish():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "write_file",
                "parameters": {
                    "type": "object",
                    "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                },
            },
        },
        {
            "type": "function",
            "function": {"name": "finish", "parameters": {"type": "object", "properties": {}}},
        },
    ]
    llm = LLM("reference", cache=False, reference=TLA_TASK.references.model)  # fixed reference, no context
    first = llm.complete(USER, tools=tools)
    assert {
        c.arguments["file_path"]: c.arguments["content"] for c in first.tool_calls
    } == TLA_TASK.references.model.files
    results = [{"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in first.tool_calls]
    second = llm.complete(USER + [first.assistant_message(), *results], tools=tools)
    assert [c.name for c in second.tool_calls] == ["finish"]


def test_reference_without_a_task_or_reference_explains_what_to_pass():
    with pytest.raises(LLMError, match="needs the task"):
        LLM("reference", cache=False).complete(USER)
    no_ref = Task(id="x/1", benchmark="x", kind="sysml")
    with pytest.raises(LLMError, match="has no reference model"):
        LLM("reference", cache=False).complete(USER, context=CallContext(task=no_ref))


def test_helper_role_must_be_set_when_the_generator_is_the_reference():
    llm = LLM(ModelRoles(generator="reference"), cache=False)
    with pytest.raises(ConfigError, match="set models.helper"):
        llm.complete(USER, role="helper")


def test_roles_load_from_yaml_with_bare_model_names():
    import yaml

    data = yaml.safe_load(
        textwrap.dedent("""\
        generator: {model: openai/qwen2.5-coder, api_base: "http://127.0.0.1:8000/v1", concurrency: 2}
        helper: mockllm/default
        judge: {model: anthropic/claude-3-5-haiku-20241022, temperature: 0, extra: {top_p: 0.9}}
        """)
    )
    roles = ModelRoles.model_validate(data)
    assert roles.for_role("helper").model == "mockllm/default" and roles.for_role("helper").is_control
    assert roles.for_role("generator").limit_key == "http://127.0.0.1:8000/v1"
    assert (
        roles.for_role("judge").extra == {"top_p": 0.9} and roles.for_role("judge").limit_key == "anthropic"
    )
    assert ModelRoles.model_validate("openai/gpt-4o-mini").for_role("judge").model == "openai/gpt-4o-mini"
    with pytest.raises(ConfigError, match="unknown LLM role"):
        roles.for_role("critic")


def test_reference_reply_is_extracted_back_to_the_reference_files():
    from sysmo.graphs.extract import extract_artifact

    text = LLM("reference", cache=False).complete(USER, context=CallContext(task=TLA_TASK)).text
    extracted = extract_artifact(text, "tla", module_name="Spin").artifact
    assert {n: t.strip() for n, t in extracted.files.items()} == TLA_TASK.references.model.files
