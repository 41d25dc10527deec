"""Model replies and endpoints that go wrong: too big, invalid UTF-16, unreachable; each recorded and named right."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI, reply
from sysmo.errors import ConfigError, LLMError
from sysmo.llm.client import LLM, repair_surrogates
from sysmo.llm.endpoint import check_reachable
from sysmo.llm.limits import ConcurrencyLimits
from sysmo.llm.response import LLMCallRecord
from sysmo.llm.roles import RoleConfig

USER = [{"role": "user", "content": "Write a TLA+ spec."}]


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def _llm(server: FakeOpenAI, tmp_path: Path, **kwargs) -> LLM:
    records: list[LLMCallRecord] = []
    config = RoleConfig(model="openai/gpt-4o-mini", api_base=server.base_url, api_key_env=None, retry_initial_s=0.01,
                        retry_max_s=0.05, timeout_s=10.0, max_retries=1, **kwargs)
    llm = LLM(config, cache=tmp_path / "cache.sqlite", on_call=records.append, limits=ConcurrencyLimits())
    llm.records = records  # type: ignore[attr-defined]
    return llm


def _dead_address() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there any more


def test_a_reply_past_the_cap_is_refused_recorded_and_not_cached(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.push(reply("x" * 5000))
    llm = _llm(server, tmp_path, max_reply_chars=1000)
    with pytest.raises(LLMError, match=r"5,000 characters \(5,000 of content\), more than the cap of 1,000"):
        llm.complete(USER)
    assert [r.error_type for r in llm.records] == ["LLMCallError"]
    server.push(reply("short"))
    assert llm.complete(USER).text == "short"  # the refused reply was not cached


def test_a_lone_surrogate_reply_is_repaired_not_labelled_a_rejected_request(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert repair_surrogates("a\ud800b\ud83d\ude00") == "a\ufffdb\U0001F600"
    server.push(reply("---- MODULE A ----\n\\* \ud800\n===="))
    response = _llm(server, tmp_path).complete(USER)
    assert "\ufffd" in response.text
    response.text.encode("utf-8")  # storable


def test_a_connection_failure_is_not_reported_as_http_500(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    dead = _dead_address()
    config = RoleConfig(model="openai/gpt-4o-mini", api_base=dead, retry_initial_s=0.01, retry_max_s=0.02,
                        timeout_s=5.0, max_retries=1)
    records: list[LLMCallRecord] = []
    with pytest.raises(LLMError) as caught:
        LLM(config, cache=False, on_call=records.append, limits=ConcurrencyLimits()).complete(USER)
    message = str(caught.value)
    assert "InternalServerError" not in message and "status=500" not in message and "(500)" not in message
    assert f"could not reach the server at {dead}" in message and "no HTTP answer" in message
    assert getattr(caught.value, "status_code", None) is None
    assert len(records) == 1 and records[0].error


def test_an_unreachable_api_base_is_named_at_once(tmp_path):
    dead = _dead_address()
    with pytest.raises(ConfigError, match=rf"--api-base {dead} is unreachable .*refused"):
        check_reachable(dead, timeout_s=2)


def test_sysmo_run_with_a_dead_api_base_stops_before_any_work(tmp_path, monkeypatch):
    from sysmo.runner import ExperimentConfig, run_experiment

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = ExperimentConfig(id="dead", output_dir=tmp_path, models=[{"model": "openai/x", "api_base": _dead_address()}])
    with pytest.raises(ConfigError, match="is unreachable"):
        run_experiment(config, progress=False)
    assert not (tmp_path / "dead").exists()


def test_a_failed_call_gets_its_llm_calls_row_with_the_error_class(server, tmp_path, monkeypatch):
    from fake_openai import http_error

    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    server.default = http_error(400, "context length exceeded")
    config = ExperimentConfig(
        id="failed-call", output_dir=tmp_path, agents=["base_modeling"], samples=1, score=False,
        models=[{"model": "openai/gpt-4o-mini", "api_base": server.base_url, "max_retries": 0, "cache": False}],
        tasks=TaskSelection(benchmarks=["starter"], ids=["starter/uml_class/library_loans"]))
    summary = run_experiment(config, progress=False)
    assert summary.errors == 1
    store = Store(tmp_path / "failed-call" / "results.sqlite")
    rows = [dict(r) for r in store.query("SELECT role, purpose, model, error, error_type FROM llm_calls")]
    assert len(rows) == 1, rows
    assert rows[0]["error_type"] == "BadRequestError" and "context length exceeded" in rows[0]["error"]
    assert rows[0]["model"] == "openai/gpt-4o-mini" and rows[0]["purpose"] == "generate"
