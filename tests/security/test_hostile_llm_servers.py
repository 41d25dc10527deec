"""A model server cannot hold a call past its deadline, fill memory with a huge reply, or make budgets miss what it
billed; a reply that is not JSON is recorded as such."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from fake_openai import FakeOpenAI, FakeReply, drip, flood, reply
from sysmo.contracts.events import EventLog, LLMCallEvent, collecting
from sysmo.llm import LLM, ConcurrencyLimits, LLMCallError, ModelRoles, RoleConfig

USER = [{"role": "user", "content": "Write a TLA+ spec of a spinlock."}]
PRICE = (1.0, 1.0)  # USD per million tokens, input and output


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def llm(server: FakeOpenAI, **settings) -> LLM:
    settings = {"price_per_mtok": PRICE, **settings}
    config = RoleConfig(model="openai/fake-model", api_base=server.base_url, retry_initial_s=0.01, retry_max_s=0.05,
                        **settings)
    return LLM(ModelRoles(generator=config), cache=False, limits=ConcurrencyLimits())


def refused(call) -> tuple[LLMCallError, LLMCallEvent]:
    """The error of one call and the event the attempt's log keeps for it."""
    with collecting(EventLog()) as log:
        with pytest.raises(LLMCallError) as caught:
            call()
    (event,) = log.llm_calls()
    return caught.value, event


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_dripping_server_holds_a_call_no_longer_than_its_deadline(server, mode):
    server.push(reply("warm"), drip(reply("a" * 200), every_s=0.1))  # the drip: over 40 s at one byte per 0.1 s
    client = llm(server, timeout_s=2.0)
    client.complete([{"role": "user", "content": "warm up"}])  # litellm's first call sets itself up for seconds
    start = time.monotonic()
    error, event = refused(lambda: client.complete(USER) if mode == "sync" else asyncio.run(client.acomplete(USER)))
    # the deadline is kept at the socket; the rest is litellm's own work around the call (seconds on a loaded machine)
    assert time.monotonic() - start < 2.0 + 8.0
    assert error.error_class == "DeadlineExceeded" and server.calls == 2  # a drip is not retried
    assert event.completion_tokens > 0  # what arrived before the deadline is counted


def test_a_flood_is_cut_at_the_cap_while_it_arrives_and_still_charged(server):
    size = 200_000_000
    server.push(flood(size))
    error, event = refused(lambda: llm(server, max_reply_chars=10_000).complete(USER))
    assert error.error_class == "ReplyTooLarge"
    assert sum(server.bytes_sent) < 20_000_000  # the client hung up near its cap (1 MiB + 60 kB), not at 200 MB
    assert event.completion_tokens >= 10_000 // 4 and event.cost_usd > 0 and event.spend_usd == event.cost_usd


def test_a_reply_over_the_character_cap_is_charged_its_reported_usage(server):
    server.push(reply("b" * 5_000, usage=(10, 1_000_000)))
    client = llm(server, max_reply_chars=1_000)
    error, event = refused(lambda: client.complete(USER))
    assert error.error_class == "ReplyTooLarge"
    assert (event.prompt_tokens, event.completion_tokens) == (10, 1_000_000)
    assert event.cost_usd == pytest.approx(1.00001) and client.spend["generator"].spend_usd == pytest.approx(1.00001)


def test_a_200_reply_that_is_not_json_is_recorded_as_malformed(server):
    server.push(FakeReply(raw_body='{"id": "x", "choices": [{"message": '))
    error, event = refused(lambda: llm(server).complete(USER))
    assert error.error_class == "MalformedReply" and event.error_type == "MalformedReply"
    assert "not valid JSON" in str(error) and "InternalServerError" not in str(error)


def test_a_cost_cap_holds_against_replies_refused_for_their_size(server, tmp_path):
    """E4: each reply is over the cap and says it cost 400k tokens ($0.40); a $0.50 cap stops the run after two."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.runner.config import Budget

    server.default = reply("c" * 5_000, usage=(10, 400_000))
    model = {"model": "openai/fake-model", "api_base": server.base_url, "max_reply_chars": 1_000,
             "price_per_mtok": list(PRICE), "max_retries": 0}
    tasks = TaskSelection(benchmarks=["starter"],
                          ids=["starter/uml_class/hotel_booking", "starter/uml_class/bug_tracker"])
    config = ExperimentConfig(id="cap", output_dir=tmp_path, agents=["base_modeling"], models=[model], samples=3,
                              score=False, concurrency=1, tasks=tasks, budget=Budget(max_cost_usd=0.5))
    summary = run_experiment(config, progress=False)
    assert summary.stopped and "budget cap reached" in summary.stopped
    assert server.calls == 2  # of the 6 attempts' first calls, before: all 6 were made and counted $0


NAN, INF = float("nan"), float("inf")
# what a hostile or broken server may put in usage: negative, not a number, infinite, absurd, fractional
BAD_USAGE = {"negative": (-10**9, -10**9), "nan": (NAN, 5), "infinite": (INF, INF), "absurd": (10**15, 10**15),
             "fractional": (1.5, 2)}


@pytest.mark.parametrize("usage", BAD_USAGE.values(), ids=BAD_USAGE.keys())
def test_a_reply_whose_usage_is_not_a_count_is_malformed_and_charged_at_its_size(server, usage):
    server.push(reply("d" * 4_000, usage=usage))
    client = llm(server, price_per_mtok=(0.0, 1000.0))
    error, event = refused(lambda: client.complete(USER))
    assert error.error_class == "MalformedReply" and event.error_type == "MalformedReply"
    assert "not a usable completion" in str(error) and "usage" in str(error) and "InternalServerError" not in str(error)
    body = sum(server.bytes_sent)  # the client counts the headers too: a few hundred bytes more
    assert body / 4 <= event.completion_tokens <= (body + 2_000) / 4
    assert event.cost_usd == pytest.approx(event.completion_tokens * 1000 / 1e6) and event.spend_usd == event.cost_usd
    spend = client.spend["generator"]
    assert spend.spend_usd == event.cost_usd > 0 and spend.prompt_tokens >= 0 and server.calls == 1  # not retried


@pytest.mark.parametrize(("usage", "cap"), [*((u, "cost") for u in BAD_USAGE.values()),
                                            (BAD_USAGE["negative"], "tokens")],
                         ids=[*(f"{k}-cost" for k in BAD_USAGE), "negative-tokens"])
def test_budget_caps_hold_against_replies_whose_usage_is_not_a_count(server, tmp_path, usage, cap):
    """Every reply says its usage was -10^9 / -10^9 (or NaN, infinite, 10^15): before, it was recorded as
    -$2,000 and all 8 attempts ran past a $1 cap. Each is now charged at its size (about 1,100 tokens, $1.10 at
    $1,000 per million output tokens), so a $2 cap or a 2,000-token cap stops the run after two calls."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.runner.config import Budget

    server.default = reply("e" * 4_400, usage=usage)
    model = {"model": "openai/fake-model", "api_base": server.base_url, "price_per_mtok": [0.0, 1000.0],
             "max_retries": 0}
    tasks = TaskSelection(benchmarks=["starter"],
                          ids=["starter/uml_class/hotel_booking", "starter/uml_class/bug_tracker"])
    budget = Budget(max_cost_usd=2.0) if cap == "cost" else Budget(max_tokens=2_000)
    config = ExperimentConfig(id="cap", output_dir=tmp_path, agents=["base_modeling"], models=[model], samples=4,
                              score=False, concurrency=1, tasks=tasks, budget=budget)
    summary = run_experiment(config, progress=False)
    assert summary.stopped and ("budget cap reached" if cap == "cost" else "token cap reached") in summary.stopped
    assert server.calls == 2  # of the 8 attempts' first calls
    from sysmo.store import Store

    store = Store(tmp_path / "cap" / "results.sqlite")
    try:
        rows = store.query("SELECT cost_usd, prompt_tokens, completion_tokens, error FROM attempts")
    finally:
        store.close()
    assert len(rows) == 2 and all(r["cost_usd"] > 1.0 and r["completion_tokens"] > 1_000 for r in rows)
    assert all("MalformedReply" in r["error"] or "not a usable completion" in r["error"] for r in rows)
