"""What the provider received: each model call records its parameters after litellm's dropping and renaming
(``drop_params=True``), with litellm's reason for every one dropped. litellm's real request building runs, for
``openai/gpt-5`` (temperature other than 1 dropped), ``anthropic/...`` and ``bedrock/...`` (no seed), against local
fake servers speaking each provider's wire format (OpenAI chat completions, Anthropic messages, Bedrock converse):
what the record says was sent is what the server's request body holds."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fake_openai import FakeOpenAI, reply
from sysmo.contracts.events import EventLog, LLMCallEvent, collecting
from sysmo.llm import LLM, ModelRoles, RoleConfig
from sysmo.llm.litellm_provider import LiteLLMProvider
from sysmo.llm.request import LLMRequest
from sysmo.llm.sent import SentParams

USER = [{"role": "user", "content": "Write a TLA+ spec of a lock."}]
TOOLS = [{"type": "function", "function": {
    "name": "write_file", "description": "write a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
GPT5 = "openai/gpt-5"
CLAUDE = "anthropic/claude-3-5-sonnet-20240620"
BEDROCK = "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"


@pytest.fixture(autouse=True)
def keys(monkeypatch) -> None:
    for name, value in (("OPENAI_API_KEY", "sk-test"), ("ANTHROPIC_API_KEY", "sk-ant-test"),
                        ("AWS_ACCESS_KEY_ID", "AKIATEST"), ("AWS_SECRET_ACCESS_KEY", "secret"),
                        ("AWS_REGION_NAME", "us-east-1")):
        monkeypatch.setenv(name, value)


def sent_of(model: str, **params: Any) -> SentParams:
    """litellm's mapping of ``params`` for ``model``, as a call to it records it (no network)."""
    extra = {"seed": params.pop("seed")} if "seed" in params else {}
    provider = LiteLLMProvider(RoleConfig(model=model))
    sent = provider.delivered(LLMRequest(model=model, messages=USER, extra=extra, **params))
    assert sent is not None
    return sent


def test_litellms_mapping_says_what_each_provider_family_receives() -> None:
    gpt5 = sent_of(GPT5, temperature=0.2, seed=7, max_tokens=100, tools=TOOLS)
    assert "temperature" not in gpt5.sent and "Only temperature=1 is supported" in gpt5.dropped["temperature"]
    assert gpt5.sent == {"seed": 7, "max_tokens": 100, "tools": "[write_file]"}
    assert gpt5.sent_as == {"max_tokens": "max_completion_tokens"}
    assert sent_of(GPT5, temperature=1).sent == {"temperature": 1} and not sent_of(GPT5, temperature=1).dropped

    for model, family in ((CLAUDE, "anthropic"), (BEDROCK, "bedrock")):
        sent = sent_of(model, temperature=0.2, seed=7, max_tokens=100)
        assert sent.sent["temperature"] == 0.2 and sent.sent["max_tokens"] == 100
        assert list(sent.dropped) == ["seed"]
        assert f"{family} does not support parameters: ['seed']" in sent.dropped["seed"]
        assert "drop_params" not in sent.dropped["seed"]  # litellm's advice on dropping is not the reason
    assert sent_of(BEDROCK, max_tokens=100).sent_as == {"max_tokens": "maxTokens"}

    plain = sent_of("openai/gpt-4o-mini", temperature=0.2, seed=7, max_tokens=100)
    assert plain.sent == {"temperature": 0.2, "seed": 7, "max_tokens": 100} and not plain.dropped
    assert plain.describe() == "temperature 0.2 · max_tokens 100 · seed 7"
    assert gpt5.describe().startswith("max_tokens 100 (as max_completion_tokens) · tools [write_file] · seed 7 · "
                                      "dropped: temperature (gpt-5 doesn't support temperature=0.2")


def _recorded_call(llm: LLM, **kwargs: Any) -> LLMCallEvent:
    events = EventLog()
    with collecting(events, stage="attempt"):
        llm.complete(USER, **kwargs)
    calls = [e for e in events.events if isinstance(e, LLMCallEvent)]
    assert len(calls) == 1
    return calls[0]


def test_gpt5_against_a_fake_openai_server_receives_no_temperature_and_the_record_says_so() -> None:
    with FakeOpenAI(default=reply("an answer")) as server:
        config = RoleConfig(model=GPT5, api_base=server.base_url, temperature=0.2, max_tokens=50, timeout_s=30)
        event = _recorded_call(LLM(ModelRoles(generator=config), cache=False), extra={"seed": 11})
        body = server.requests[0]
    assert "temperature" not in body and body["seed"] == 11 and body["max_completion_tokens"] == 50
    assert event.params["temperature"] == 0.2  # as requested...
    sent = SentParams.model_validate(event.sent_params)  # ...and as received
    assert sent.sent == {"seed": 11, "max_tokens": 50} and sent.sent_as == {"max_tokens": "max_completion_tokens"}
    assert "Only temperature=1 is supported" in sent.dropped["temperature"]
    assert all((sent.sent_as.get(name) or name) in body for name in sent.sent)


class WireServer:
    """A local HTTP server answering every POST with ``answer(path, body)`` (a provider's reply JSON), recording
    each request's path and body."""

    def __init__(self, answer: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
        self.answer = answer
        self.requests: list[tuple[str, dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"{}")
                server.requests.append((self.path, body))
                data = json.dumps(server.answer(self.path, body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> WireServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def anthropic_message(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": [{"type": "text", "text": "an answer"}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 7}}


def bedrock_converse(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"output": {"message": {"role": "assistant", "content": [{"text": "an answer"}]}},
            "stopReason": "end_turn", "usage": {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19},
            "metrics": {"latencyMs": 5}}


@pytest.fixture
def anthropic_server() -> Iterator[WireServer]:
    with WireServer(anthropic_message) as server:
        yield server


@pytest.fixture
def bedrock_server() -> Iterator[WireServer]:
    with WireServer(bedrock_converse) as server:
        yield server


def test_anthropic_against_a_fake_messages_server_receives_no_seed_and_the_record_says_so(anthropic_server) -> None:
    config = RoleConfig(model=CLAUDE, api_base=anthropic_server.url, api_key_env="ANTHROPIC_API_KEY",
                        temperature=0.3, max_tokens=64, timeout_s=30)
    event = _recorded_call(LLM(ModelRoles(generator=config), cache=False), extra={"seed": 5})
    path, body = anthropic_server.requests[0]
    assert path.endswith("/v1/messages") and event.text == "an answer"
    assert "seed" not in body and body["temperature"] == 0.3 and body["max_tokens"] == 64
    sent = SentParams.model_validate(event.sent_params)
    assert sent.sent == {"temperature": 0.3, "max_tokens": 64}
    assert list(sent.dropped) == ["seed"] and "anthropic does not support parameters: ['seed']" in sent.dropped["seed"]


def test_bedrock_against_a_fake_converse_server_receives_no_seed_and_the_record_says_so(bedrock_server) -> None:
    config = RoleConfig(model=BEDROCK, api_base=bedrock_server.url, api_key_env="AWS_SECRET_ACCESS_KEY",
                        temperature=0.3, max_tokens=64, timeout_s=30)
    event = _recorded_call(LLM(ModelRoles(generator=config), cache=False), extra={"seed": 5})
    path, body = bedrock_server.requests[0]
    assert "/converse" in path and event.response is not None and event.text == "an answer"
    assert "seed" not in json.dumps(body) and body["inferenceConfig"] == {"temperature": 0.3, "maxTokens": 64}
    sent = SentParams.model_validate(event.sent_params)
    assert sent.sent == {"temperature": 0.3, "max_tokens": 64} and sent.sent_as == {"max_tokens": "maxTokens"}
    assert list(sent.dropped) == ["seed"] and "bedrock does not support parameters: ['seed']" in sent.dropped["seed"]


def test_the_docs_table_of_what_each_provider_family_receives_is_litellms_mapping() -> None:
    from pathlib import Path

    from sysmo.llm.litellm_provider import DOC_TABLE_MODELS, DOC_TABLE_PARAMS, parameter_table

    docs = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text()
    shown = docs.split("<!-- parameter-table -->\n", 1)[1].split("\n<!-- /parameter-table -->", 1)[0]
    assert shown == parameter_table(DOC_TABLE_MODELS, DOC_TABLE_PARAMS)
    rows = {line.split(" | ")[0].strip("| `").split("`")[0]: line for line in shown.splitlines()[2:]}
    assert "| dropped | sent |" in rows["openai/gpt-5"]  # temperature dropped, seed sent
    assert rows["anthropic/claude-3-5-sonnet-20240620"].split(" | ")[2] == "dropped"  # the seed
    assert rows["bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"].split(" | ")[2] == "dropped"
