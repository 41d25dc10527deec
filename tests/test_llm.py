"""The LLM layer against a fake OpenAI-compatible server: retries, cache, tools, cost, limits, errors."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, FakeReply, http_error, reply, slow, tool_reply
from sysmo.errors import LLMError, UnknownNameError
from sysmo.llm import (
    LLM,
    CallContext,
    ConcurrencyLimits,
    LLMCallError,
    LLMCallRecord,
    ModelRoles,
    ResponseCache,
    RoleConfig,
)
from sysmo.llm.retry import retry_after_s

USER = [{"role": "user", "content": "Write a TLA+ spec of a spinlock."}]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def config(server: FakeOpenAI, **kwargs) -> RoleConfig:
    base = {
        "model": "openai/gpt-4o-mini",
        "api_base": server.base_url,
        "retry_initial_s": 0.01,
        "retry_max_s": 0.05,
        "timeout_s": 10.0,
    }  # fast retries for tests
    return RoleConfig(**{**base, **kwargs})


def make_llm(server: FakeOpenAI, tmp_path: Path, **kwargs) -> LLM:
    records: list[LLMCallRecord] = []
    llm = LLM(
        config(server, **kwargs),
        cache=tmp_path / "cache.sqlite",
        on_call=records.append,
        limits=ConcurrencyLimits(),
    )
    llm.records = records  # type: ignore[attr-defined]
    return llm


def test_plain_completion_returns_text_usage_and_the_prompt_reaches_the_server(server, tmp_path):
    server.push(reply("---- MODULE Spin ----\n====", usage=(40, 10)))
    llm = make_llm(server, tmp_path, temperature=0.7, max_tokens=256)
    response = llm.complete(USER, role="generator", sample_index=0)
    assert response.text == "---- MODULE Spin ----\n===="
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (40, 10)
    assert response.provider == "openai" and not response.is_control and not response.cached
    assert server.calls == 1
    body = server.requests[0]
    assert body["messages"] == USER and body["temperature"] == 0.7 and body["max_tokens"] == 256
    assert body["model"] == "gpt-4o-mini"
    [record] = llm.records
    assert (
        record.request_hash == response.request_hash and record.response == response and record.error is None
    )


def test_a_server_that_reports_no_usage_gets_its_tokens_counted_by_the_tokenizer(server, tmp_path):
    """Some OpenAI-compatible servers and proxies send no ``usage``: the call's tokens are litellm's tokenizer's
    count (marked estimated), not 0, so a token cap and the price still see the call."""
    import json

    body = {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "---- MODULE Spin ----\nVARIABLE x\n===="}}]}
    server.push(FakeReply(raw_body=json.dumps(body)), reply("counted by the server", usage=(40, 10)))
    llm = make_llm(server, tmp_path)
    estimated = llm.complete(USER, role="generator", sample_index=0).usage
    assert estimated.estimated and estimated.prompt_tokens > 5 and estimated.completion_tokens > 5
    reported = llm.complete(USER, role="generator", sample_index=1).usage
    assert (reported.prompt_tokens, reported.completion_tokens, reported.estimated) == (40, 10, False)


def test_rate_limit_429_then_success_is_retried(server, tmp_path):
    server.push(http_error(429, "slow down", retry_after=0.01), reply("ok"))
    llm = make_llm(server, tmp_path)
    response = llm.complete(USER)
    assert response.text == "ok" and response.attempts == 2
    assert server.calls == 2


def test_server_error_500_then_success_is_retried(server, tmp_path):
    server.push(http_error(500), http_error(503), reply("ok"))
    response = make_llm(server, tmp_path).complete(USER)
    assert response.text == "ok" and server.calls == 3


def test_bad_request_400_is_not_retried_and_the_error_says_why(server, tmp_path):
    server.push(http_error(400, "messages must not be empty"), reply("never sent"))
    llm = make_llm(server, tmp_path)
    with pytest.raises(LLMCallError) as info:
        llm.complete(USER)
    assert server.calls == 1
    assert info.value.status_code == 400 and not info.value.retryable
    assert "rejected the request" in str(info.value) and "messages must not be empty" in str(info.value)
    [record] = llm.records
    assert record.response is None and "messages must not be empty" in record.error


def test_unauthorised_401_is_not_retried_and_names_the_key_variable(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVER_KEY", "secret")
    server.push(http_error(401, "invalid key"))
    with pytest.raises(LLMCallError, match="MY_SERVER_KEY"):
        make_llm(server, tmp_path, api_key_env="MY_SERVER_KEY").complete(USER)
    assert server.calls == 1


def test_timeout_is_retried(server, tmp_path):
    server.push(slow("too late", 1.0), reply("in time"))
    response = make_llm(server, tmp_path, timeout_s=0.25).complete(USER)
    assert response.text == "in time" and server.calls == 2


def test_retries_stop_after_max_retries_with_a_clear_error(server, tmp_path):
    server.push(*[http_error(429) for _ in range(3)], reply("not reached"))
    with pytest.raises(LLMCallError, match="kept failing after 3 attempts") as info:
        make_llm(server, tmp_path, max_retries=2).complete(USER)
    assert info.value.status_code == 429 and server.calls == 3


def test_second_identical_run_is_answered_from_the_cache_with_zero_http_calls(server, tmp_path):
    server.push(reply("first", usage=(1000, 500)), reply("second"))
    first = make_llm(server, tmp_path).complete(USER, sample_index=3)
    rerun = make_llm(server, tmp_path)  # a new process would see the same SQLite file
    again = rerun.complete(USER, sample_index=3)
    assert server.calls == 1
    assert again.text == "first" and again.cached and not first.cached
    assert again.cost_usd == first.cost_usd > 0 and again.spend_usd == 0.0
    assert again.request_hash == first.request_hash and again.original_latency_s == first.latency_s
    assert rerun.spend["generator"].cached_calls == 1 and rerun.spend["generator"].spend_usd == 0.0


def test_a_different_sample_index_is_a_different_cache_entry(server, tmp_path):
    server.push(reply("sample zero"), reply("sample one"))
    llm = make_llm(server, tmp_path)
    zero, one = llm.complete(USER, sample_index=0), llm.complete(USER, sample_index=1)
    assert (zero.text, one.text) == ("sample zero", "sample one")
    assert zero.request_hash != one.request_hash and server.calls == 2
    assert llm.complete(USER, sample_index=1).cached and server.calls == 2


def test_parameters_and_server_are_part_of_the_cache_key(server, tmp_path):
    server.push(reply("t0"), reply("t1"))
    llm = make_llm(server, tmp_path)
    assert llm.complete(USER, temperature=0.0).text == "t0"
    assert llm.complete(USER, temperature=1.0).text == "t1"
    with FakeOpenAI() as other:
        other.push(reply("other server"))
        assert make_llm(other, tmp_path).complete(USER, temperature=0.0).text == "other server"


def test_tool_calls_round_trip_in_the_openai_format(server, tmp_path):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "write_file",
                "description": "Write a file in the workspace",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"],
                },
            },
        }
    ]
    server.push(
        tool_reply(("write_file", {"path": "Spin.tla", "content": "---- MODULE Spin ----"})), reply("done")
    )
    llm = make_llm(server, tmp_path)
    first = llm.complete(USER, tools=tools)
    [call] = first.tool_calls
    assert call.name == "write_file" and call.arguments == {
        "path": "Spin.tla",
        "content": "---- MODULE Spin ----",
    }
    assert first.finish_reason == "tool_calls" and server.requests[0]["tools"] == tools
    conversation = USER + [
        first.assistant_message(),
        {"role": "tool", "tool_call_id": call.id, "content": "wrote Spin.tla"},
    ]
    assert llm.complete(conversation, tools=tools).text == "done"
    sent = server.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == call.id and sent[2]["tool_call_id"] == call.id


def test_malformed_tool_arguments_are_kept_with_an_error_not_raised(server, tmp_path):
    server.push(tool_reply({"name": "write_file", "arguments": '{"path": "Spin.tla", "content": '}))
    [call] = make_llm(server, tmp_path).complete(USER).tool_calls
    assert (
        call.arguments == {} and "not valid JSON" in call.error and call.arguments_json.startswith('{"path"')
    )


def test_cost_comes_from_litellm_price_map_for_a_known_model(server, tmp_path):
    server.push(reply("priced", usage=(1000, 500)))
    response = make_llm(server, tmp_path).complete(USER)
    # gpt-4o-mini in the bundled map of litellm 1.106.2: $0.15 / $0.60 per million input / output tokens
    assert response.cost_usd == pytest.approx(1000 * 0.15e-6 + 500 * 0.60e-6)
    assert response.spend_usd == response.cost_usd and response.cost_note is None


def test_unknown_local_model_costs_zero_with_a_note_unless_priced(server, tmp_path):
    server.push(reply("free"), reply("priced"))
    free = make_llm(server, tmp_path, model="openai/my-local-qwen").complete(USER)
    assert free.cost_usd == 0.0 and "no price" in free.cost_note
    priced = make_llm(server, tmp_path, model="openai/my-local-qwen", price_per_mtok=(1.0, 2.0)).complete(
        USER, sample_index=1
    )
    assert priced.cost_usd == pytest.approx((12 * 1.0 + 7 * 2.0) / 1e6)


def test_litellm_mock_response_path_needs_no_server(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    llm = LLM(
        RoleConfig(model="openai/gpt-4o-mini", extra={"mock_response": "mocked spec"}),
        cache=tmp_path / "c.sqlite",
    )
    response = llm.complete(USER)
    assert response.text == "mocked spec" and response.provider == "openai"


def test_concurrency_limit_per_server_is_respected_by_threads(server, tmp_path):
    server.default = slow("busy", 0.15)
    llm = make_llm(server, tmp_path, concurrency=2)
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            llm.complete([{"role": "user", "content": f"task {i}"}])
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and server.calls == 6
    assert server.max_concurrent == 2


def test_concurrency_limit_is_respected_by_asyncio_tasks(server, tmp_path):
    server.default = slow("busy", 0.15)
    llm = make_llm(server, tmp_path, concurrency=3)

    async def run() -> list[str]:
        calls = [llm.acomplete([{"role": "user", "content": f"task {i}"}]) for i in range(7)]
        return [r.text for r in await asyncio.gather(*calls)]

    assert asyncio.run(run()) == ["busy"] * 7
    assert server.max_concurrent == 3


def test_async_calls_retry_and_use_the_cache(server, tmp_path):
    server.push(http_error(429), reply("async ok"))
    llm = make_llm(server, tmp_path)
    first = asyncio.run(llm.acomplete(USER, role="judge"))
    second = asyncio.run(llm.acomplete(USER, role="judge"))
    assert (first.text, first.attempts, second.cached) == ("async ok", 2, True)
    assert server.calls == 2 and first.role == "judge"


def _closed_by_the_client(server: FakeOpenAI, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while server.open_connections and time.monotonic() < deadline:
        time.sleep(0.02)
    return server.open_connections == 0


def test_model_calls_to_one_server_share_one_connection(server, tmp_path):
    from sysmo.llm.transport import close_clients

    server.push(*(reply(f"answer {i}") for i in range(4)))
    llm = make_llm(server, tmp_path)
    assert [llm.complete(USER, sample_index=i).text for i in range(4)] == [f"answer {i}" for i in range(4)]
    assert (server.calls, server.connections, server.open_connections) == (4, 1, 1)
    close_clients()
    assert _closed_by_the_client(server)


def test_async_model_calls_on_one_event_loop_share_one_connection_closed_as_the_loop_ends(server, tmp_path):
    server.push(*(reply(f"answer {i}") for i in range(4)))
    llm = make_llm(server, tmp_path)

    async def run() -> list[str]:
        texts = [(await llm.acomplete(USER, sample_index=i)).text for i in range(4)]
        assert server.open_connections == 1
        return texts

    assert asyncio.run(run()) == [f"answer {i}" for i in range(4)]
    assert (server.calls, server.connections) == (4, 1)
    assert _closed_by_the_client(server)  # asyncio.run's shutdown closed the loop's client


def test_roles_are_configured_separately(server, tmp_path):
    with FakeOpenAI() as judge_server:
        server.push(reply("generated"))
        judge_server.push(reply("score: 4"))
        roles = ModelRoles(
            generator=config(server),
            helper="mockllm/default",
            judge=config(judge_server, model="openai/judge-model", temperature=0.0),
        )
        llm = LLM(roles, cache=tmp_path / "c.sqlite")
        assert llm.complete(USER, role="generator").text == "generated"
        assert llm.complete(USER, role="judge").text == "score: 4"
        assert llm.complete(USER, role="helper").provider == "mockllm"
        assert (
            judge_server.requests[0]["temperature"] == 0.0
            and judge_server.requests[0]["model"] == "judge-model"
        )


def test_call_context_is_recorded(server, tmp_path):
    server.push(reply("x"))
    llm = make_llm(server, tmp_path)
    llm.complete(USER, context=CallContext(task_id="starter/tla/spinlock", round=2, agent="base_modeling"))
    record = llm.records[0]
    assert record.context.task_id == "starter/tla/spinlock" and record.context.round == 2
    assert LLMCallRecord.model_validate_json(record.model_dump_json()) == record  # the store can persist it


def test_unknown_model_name_says_how_to_name_one(tmp_path):
    llm = LLM(RoleConfig(model="no-such-model-xyz"), cache=False)
    with pytest.raises(UnknownNameError, match="prefix it with a provider"):
        llm.complete(USER)


def test_missing_api_key_names_the_variable_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY"):
        LLM(RoleConfig(model="anthropic/claude-3-5-sonnet-20240620"), cache=False).complete(USER)
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(LLMError, match="set the environment variable MY_KEY"):
        LLM(
            RoleConfig(model="openai/x", api_base="http://127.0.0.1:9/v1", api_key_env="MY_KEY"), cache=False
        ).complete(USER)


def test_cache_is_shared_safely_by_threads(tmp_path):
    from sysmo.llm import LLMResponse

    cache = ResponseCache(tmp_path / "c.sqlite")

    def fill(worker: int) -> None:
        for i in range(20):
            cache.put(f"{worker}-{i}", LLMResponse(text=str(i), model="m", provider="p"))

    threads = [threading.Thread(target=fill, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 80 and cache.get("3-19").text == "19"


def test_retry_after_header_is_read_in_seconds_and_dates():
    class Exc(Exception):
        def __init__(self, value: str) -> None:
            self.litellm_response_headers = {"retry-after": value}

    assert retry_after_s(Exc("2.5")) == 2.5
    assert retry_after_s(Exc("Wed, 21 Oct 2015 07:28:00 GMT")) == 0.0  # in the past: no wait
    assert retry_after_s(Exception()) is None


def test_importing_sysmo_llm_does_not_import_litellm():
    code = (
        "import os, sys, sysmo.llm; assert 'litellm' not in sys.modules, 'litellm imported'; "
        "assert 'langchain_core' not in sys.modules; print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "True"


def test_structured_output_schema_is_sent_and_the_answer_parsed(server, tmp_path):
    from pydantic import BaseModel

    class Entity(BaseModel):
        name: str
        attributes: list[str]

    server.push(reply('```json\n{"name": "Lock", "attributes": ["holder"]}\n```'), reply("not json"))
    llm = make_llm(server, tmp_path)
    response = llm.complete(USER, response_format=Entity)
    assert response.parse(Entity) == Entity(name="Lock", attributes=["holder"])
    assert server.requests[0]["response_format"]["json_schema"]["name"] == "Entity"
    with pytest.raises(LLMError, match="did not answer with a valid Entity"):
        llm.complete(USER, response_format=Entity, sample_index=1).parse(Entity)


def test_every_call_emits_request_retry_response_and_cache_hit_events(server, tmp_path):
    from structlog.testing import capture_logs
    from sysmo.log import configure

    server.push(http_error(429), reply("ok", usage=(20, 5)))
    llm = make_llm(server, tmp_path)
    configure(level="INFO")
    try:
        with capture_logs() as events:
            llm.complete(USER, role="helper")
            llm.complete(USER, role="helper")
    finally:
        configure()
    names = [e["event"] for e in events]
    assert names == ["llm.request", "llm.retry", "llm.response", "llm.cache_hit"]
    response = events[2]
    assert response["model"] == "openai/gpt-4o-mini" and response["role"] == "helper"
    assert response["prompt_tokens"] == 20 and response["cost_usd"] > 0 and response["attempts"] == 2
    assert events[1]["status"] == 429
