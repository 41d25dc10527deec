"""The typed event stream of an attempt: every model call of every role (full prompt and reply, or the error),
tool calls, graph steps; stored with the attempt; OpenHands steps counted in tokens, cost and budget; cached
replies cost nothing new."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_scripts import fake_llm, model_reply, replies_for
from agent_tasks import task_of, text_task
from fake_openai import FakeOpenAI, http_error, reply
from sysmo.agents.run import run_attempt
from sysmo.contracts.task import TaskKind
from sysmo.contracts.events import (EVENTS_SCHEMA_VERSION, ErrorEvent, EventAdapter, GraphStepEvent, LLMCallEvent,
                                    ToolCallEvent)
from sysmo.contracts.attempt import AttemptStatus
from sysmo.graphs.context import AgentContext
from sysmo.store import Store
from sysmo.tools.checkers import check_artifact

PRICE = (1000.0, 2000.0)  # $ per million prompt / completion tokens: the fake server's 12+7 tokens cost $0.026


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _ctx(agent: str, task, server: FakeOpenAI, cache: object = False, **extra) -> AgentContext:
    return AgentContext(task=task, llm=fake_llm(server.base_url, cache=cache, price_per_mtok=PRICE),
                        checker=check_artifact, agent=agent, attempt_id="a1", **extra)


def test_metagpt_events_hold_every_roles_prompt_and_reply_and_are_stored_with_the_attempt(
        server: FakeOpenAI, tmp_path: Path) -> None:
    from sysmo.agents.control_script import broken_artifact

    task = text_task(TaskKind.SYSML)
    server.push(*replies_for("metagpt", task, [broken_artifact(task), task.references.model]))

    attempt = run_attempt("metagpt", _ctx("metagpt", task, server), model_name="openai/fake-model")

    calls = [e for e in attempt.events if isinstance(e, LLMCallEvent)]
    # analyst, architect, modeler (generate), then the reviewer and the modeler's repair
    assert [c.purpose for c in calls] == ["analyst", "architect", "generate", "review", "repair"]
    for call, request in zip(calls, server.requests):
        assert call.messages == request["messages"]  # the full prompt, as sent
        assert call.text and call.response is not None and call.v == EVENTS_SCHEMA_VERSION
    assert "Requirements Analyst" in calls[0].messages[-1]["content"]
    assert [e.outcome for e in attempt.events if isinstance(e, ToolCallEvent)] == ["failed", "ok"]
    assert [e.node for e in attempt.events if isinstance(e, GraphStepEvent)][:2] == ["analyst", "architect"]
    assert [e.seq for e in attempt.events] == list(range(len(attempt.events)))

    store = Store(tmp_path / "results.sqlite")
    store.save_attempt("exp", attempt, {})
    stored = store.attempt("a1").events
    assert [e.model_dump() for e in stored] == [e.model_dump() for e in attempt.events]
    row = store.query("SELECT json FROM events WHERE attempt_id='a1' AND type='llm_call' ORDER BY seq")[0]
    assert EventAdapter.validate_json(row["json"]).purpose == "analyst"


def test_a_failed_model_call_is_an_event_with_its_error_class(server: FakeOpenAI, tmp_path: Path) -> None:
    server.push(http_error(400, "model does not support this request"))

    attempt = run_attempt("base_modeling", _ctx("base_modeling", task_of(TaskKind.SYSML, tmp_path), server),
                          model_name="openai/fake-model")

    assert attempt.status == AttemptStatus.ERROR
    (call,) = [e for e in attempt.events if isinstance(e, LLMCallEvent)]
    assert call.response is None and call.error_type and "does not support" in call.error
    assert any(isinstance(e, ErrorEvent) for e in attempt.events)


def test_openhands_steps_without_a_file_count_in_tokens_cost_and_llm_calls(server: FakeOpenAI,
                                                                             tmp_path: Path) -> None:
    server.push(*[reply("thinking ...") for _ in range(3)])
    ctx = _ctx("openhands", text_task(TaskKind.UML_CLASS), server, max_steps=3)

    attempt = run_attempt("openhands", ctx, model_name="openai/fake-model")

    assert attempt.rounds == [] and server.calls == 3
    assert len([e for e in attempt.events if isinstance(e, LLMCallEvent)]) == 3
    assert (attempt.prompt_tokens, attempt.completion_tokens) == (36, 21)
    assert attempt.cost_usd == pytest.approx(3 * (12 * 1000 + 7 * 2000) / 1e6)
    assert attempt.spend_usd == pytest.approx(attempt.cost_usd)
    store = Store(tmp_path / "results.sqlite")
    store.save_attempt("exp", attempt, {})
    rows = store.query("SELECT cost_usd, spend_usd, prompt_tokens FROM attempts")
    assert (rows[0]["cost_usd"], rows[0]["spend_usd"], rows[0]["prompt_tokens"]) == (
        pytest.approx(0.078), pytest.approx(0.078), 36)
    assert store.query("SELECT COUNT(*) AS n FROM llm_calls WHERE round_idx IS NULL")[0]["n"] == 3


def test_a_rerun_from_the_cache_keeps_the_cost_and_spends_nothing(server: FakeOpenAI, tmp_path: Path) -> None:
    task = text_task(TaskKind.SYSML)
    server.push(model_reply("base_modeling", task.references.model))
    cache = tmp_path / "llm_cache.sqlite"

    first = run_attempt("base_modeling", _ctx("base_modeling", task, server, cache=cache),
                        model_name="openai/fake-model")
    second = run_attempt("base_modeling", _ctx("base_modeling", task, server, cache=cache),
                         model_name="openai/fake-model")

    assert server.calls == 1
    assert first.spend_usd == first.cost_usd == pytest.approx((12 * 1000 + 7 * 2000) / 1e6)
    assert second.cost_usd == first.cost_usd and second.spend_usd == 0.0
    (cached,) = [e for e in second.events if isinstance(e, LLMCallEvent)]
    assert cached.cached and cached.spend_usd == 0.0 and cached.cost_usd == first.cost_usd


def test_a_store_written_before_events_gains_the_table_and_the_spend_column(tmp_path: Path) -> None:
    import sqlite3

    from sysmo.contracts.attempt import Attempt

    db = tmp_path / "results.sqlite"
    with sqlite3.connect(db) as conn:  # the attempts table as stores had it before spend_usd
        conn.execute("CREATE TABLE attempts (id TEXT PRIMARY KEY, experiment_id TEXT, task_id TEXT, benchmark TEXT,"
                     " kind TEXT, domain TEXT, difficulty INTEGER, agent TEXT, model TEXT, sample_index INTEGER,"
                     " status TEXT, n_rounds INTEGER, repair_rounds INTEGER, passed_round INTEGER, duration_s REAL,"
                     " llm_time_s REAL, tool_time_s REAL, prompt_tokens INTEGER, completion_tokens INTEGER,"
                     " cost_usd REAL, is_control INTEGER, error TEXT, finished_at TEXT, attempt_json TEXT)")
    store = Store(db)
    store.save_attempt("exp", Attempt(id="old1", task_id="t", agent="base_modeling", model="m"), {})
    assert store.query("SELECT spend_usd FROM attempts")[0]["spend_usd"] == 0.0
    assert store.attempt("old1").events == []
