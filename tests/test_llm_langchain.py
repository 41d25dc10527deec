"""LangChain chat models for LangGraph agents: the sysmo adapter (cached, recorded, offline), ChatOpenAI."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from fake_openai import FakeOpenAI, reply, tool_reply
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from sysmo.llm import LLM, ConcurrencyLimits, LLMCallRecord, MockScript, RoleConfig
from sysmo.llm.langchain_chat import SysmoChatModel, chat_model


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@tool
def write_file(path: str, content: str) -> str:
    """Write a file in the workspace."""
    return f"wrote {path}"


def test_adapter_calls_go_through_the_llm_with_tools_cache_and_records(server, tmp_path):
    server.push(
        tool_reply(("write_file", {"path": "Spin.tla", "content": "---- MODULE Spin ----"})), reply("done")
    )
    records: list[LLMCallRecord] = []
    llm = LLM(
        RoleConfig(model="openai/gpt-4o-mini", api_base=server.base_url),
        cache=tmp_path / "c.sqlite",
        on_call=records.append,
        limits=ConcurrencyLimits(),
    )
    model = chat_model(llm, role="generator", sample_index=1)
    assert isinstance(model, SysmoChatModel)
    bound = model.bind_tools([write_file])
    messages = [SystemMessage("You write TLA+."), HumanMessage("Model a spinlock.")]
    ai = bound.invoke(messages)
    [call] = ai.tool_calls
    assert call["name"] == "write_file" and call["args"]["path"] == "Spin.tla"
    assert ai.usage_metadata["input_tokens"] == 12 and ai.response_metadata["provider"] == "openai"
    assert server.requests[0]["tools"][0]["function"]["name"] == "write_file"
    assert server.requests[0]["messages"][0] == {"role": "system", "content": "You write TLA+."}
    follow = messages + [ai, ToolMessage("wrote Spin.tla", tool_call_id=call["id"])]
    assert asyncio.run(bound.ainvoke(follow)).content == "done"
    assert server.requests[1]["messages"][-1]["tool_call_id"] == call["id"]
    assert bound.invoke(messages).tool_calls == ai.tool_calls and server.calls == 2  # cached
    assert [r.cached for r in records] == [False, False, True] and records[0].sample_index == 1


def test_adapter_runs_offline_on_mockllm_and_stays_labelled():
    script = MockScript(
        responses=[
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "A.puml", "content": "@startuml"}}]}
        ]
    )
    llm = LLM("mockllm/agent", cache=False, scripts={"agent": script})
    ai = chat_model(llm).bind_tools([write_file]).invoke([HumanMessage("Draw it.")])
    assert ai.tool_calls[0]["args"] == {"path": "A.puml", "content": "@startuml"}
    assert ai.response_metadata["is_control"] and ai.response_metadata["provider"] == "mockllm"


def test_chat_openai_when_the_role_asks_for_it(server):
    config = RoleConfig(
        model="openai/served-model",
        api_base=server.base_url,
        client="langchain-openai",
        temperature=0.2,
        max_retries=0,
    )
    server.push(reply("from ChatOpenAI"))
    model = chat_model(config)
    assert type(model).__name__ == "ChatOpenAI"
    assert model.invoke([HumanMessage("hi")]).content == "from ChatOpenAI"
    assert server.requests[0]["model"] == "served-model" and server.requests[0]["temperature"] == 0.2
