"""``sysmo replay``: a stored attempt re-run from its recorded events, with no model call, reproduces its
artifacts and scores; a record that no longer matches is reported, never papered over. And the budget counts
new money only: a re-run answered from the LLM cache spends $0."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import typer
from fake_openai import FakeOpenAI, reply
from typer.testing import CliRunner

TASK = "starter/uml_class/library_loans"
BROKEN = "```plantuml\n@startuml\nclass Book {\n  +title: String\n\n@enduml\n```"
FIXED = "```plantuml\n@startuml\nclass Book {\n  +title: String\n}\nclass Loan\nBook -- Loan\n@enduml\n```"
PRICE = [1000.0, 2000.0]  # $ per million tokens: each fake reply (12+7 tokens) costs $0.026


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def config(tmp_path: Path, server: FakeOpenAI, id: str, **overrides):
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig

    model = {"model": "openai/fake-model", "api_base": server.base_url, "price_per_mtok": PRICE}
    fields = dict(id=id, output_dir=tmp_path / "runs", agents=["base_modeling"], models=[model], samples=1,
                  concurrency=1, max_rounds=2, tasks=TaskSelection(benchmarks=["starter"], ids=[TASK]))
    fields.update(overrides)
    return ExperimentConfig(**fields)


def cli() -> typer.Typer:
    from sysmo.cli.runner import register

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    return app


@pytest.fixture
def three_rounds(tmp_path: Path):
    """A stored, scored attempt that needed two repairs (3 rounds) from the fake server."""
    from sysmo.runner import run_experiment
    from sysmo.store import Store

    with FakeOpenAI() as server:
        server.push(reply(BROKEN), reply(BROKEN), reply(FIXED))
        # scored (CLUE over name tokens: no torch import to load MiniLM; the replay scores with the same settings)
        run_experiment(config(tmp_path, server, "exp3", scoring={"embedding": "token"}), progress=False)
        store = Store(tmp_path / "runs" / "exp3" / "results.sqlite")
        (row,) = store.query("SELECT id FROM attempts")
        yield server, store, row["id"]
        store.close()


@pytest.mark.slow
def test_replay_of_a_three_round_attempt_reproduces_artifacts_and_scores_with_no_model_call(
        three_rounds, tmp_path: Path) -> None:
    app = cli()
    server, store, attempt_id = three_rounds
    attempt = store.attempt(attempt_id)
    assert len(attempt.rounds) == 3 and attempt.status.value == "passed" and store.scorecard(attempt_id)

    result = CliRunner().invoke(app, ["replay", attempt_id[:10], "--json", "-o", str(tmp_path / "runs")])

    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["identical"] and report["differences"] == [] and report["score_compared"]
    assert report["model_calls_answered"] == report["model_calls_recorded"] == 3
    assert report["live_model_calls"] == 0 and server.calls == 3  # nothing reached the server

    traced = CliRunner().invoke(app, ["trace", attempt_id, "--json", "-o", str(tmp_path / "runs")])
    calls = [e for e in json.loads(traced.output)["events"] if e["type"] == "llm_call"]
    assert [(c["purpose"], c["response"]["text"]) for c in calls] == [
        ("generate", BROKEN), ("repair", BROKEN), ("repair", FIXED)]
    assert [c["messages"] for c in calls] == [r["messages"] for r in server.requests]
    shown = CliRunner().invoke(app, ["trace", attempt_id, "-o", str(tmp_path / "runs")], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, (shown.output, shown.exception)
    assert shown.output.count("model call #") == 3 and "generator repair round 2" in shown.output


@pytest.mark.slow
def test_a_replay_whose_record_differs_reports_it_and_fails(three_rounds, tmp_path: Path) -> None:
    app = cli()
    server, store, attempt_id = three_rounds
    row = store.query("SELECT seq, json FROM events WHERE attempt_id=? AND type='llm_call' ORDER BY seq",
                      (attempt_id,))[1]
    event = json.loads(row["json"])
    event["response"]["text"] = FIXED  # the first repair now succeeds: the replay stops after 2 rounds
    with store._conn:
        store._conn.execute("UPDATE events SET json=? WHERE attempt_id=? AND seq=?",
                            (json.dumps(event), attempt_id, row["seq"]))

    result = CliRunner().invoke(app, ["replay", attempt_id, "-o", str(tmp_path / "runs")])

    assert result.exit_code == 1
    assert "DIFFERENT" in result.output and "rounds 3 -> 2" in result.output
    assert server.calls == 3


def test_an_unrecorded_request_fails_loudly(tmp_path: Path) -> None:
    from sysmo.contracts.events import LLMCallEvent
    from sysmo.llm import LLM
    from sysmo.llm.recorded import RecordedProvider, UnrecordedRequestError
    from sysmo.llm.roles import ModelRoles

    roles = ModelRoles(generator="openai/fake-model")
    llm = LLM(roles, cache=False, provider=RecordedProvider([]))
    with pytest.raises(UnrecordedRequestError, match="was not recorded"):
        llm.complete([{"role": "user", "content": "hi"}])
    # recorded: answered in order, then the second identical request is not recorded any more
    key = llm._request([{"role": "user", "content": "hi"}], "generator", 0, None, None, None, None, None, None)[1].key()
    event = LLMCallEvent(role="generator", model="openai/fake-model", provider="openai", request_hash=key,
                         messages=[{"role": "user", "content": "hi"}],
                         response={"text": "hello", "model": "openai/fake-model", "provider": "openai",
                                   "cost_usd": 0.5})
    llm = LLM(roles, cache=False, provider=RecordedProvider([event]))
    answer = llm.complete([{"role": "user", "content": "hi"}])
    assert answer.text == "hello" and answer.spend_usd == 0.0
    with pytest.raises(UnrecordedRequestError):
        llm.complete([{"role": "user", "content": "hi"}])


def test_a_rerun_answered_from_the_cache_adds_nothing_to_the_budget(tmp_path: Path) -> None:
    from sysmo.runner import Budget, run_experiment
    from sysmo.store import Store

    with FakeOpenAI(default=reply(FIXED)) as server:
        first = run_experiment(config(tmp_path, server, "first", samples=2, score=False), progress=False)
        # same calls from the cache: under a cap smaller than one call's cost, every attempt still runs
        second = run_experiment(config(tmp_path, server, "second", samples=2, score=False, concurrency=2,
                                       budget=Budget(max_cost_usd=0.001)), progress=False)
    assert server.calls == 2
    assert first.cost_usd == pytest.approx(2 * 0.026) and second.cost_usd == 0.0
    assert second.ran == 2 and not second.stopped
    store = Store(tmp_path / "runs" / "second" / "results.sqlite")
    rows = store.query("SELECT cost_usd, spend_usd FROM attempts")
    assert [(r["cost_usd"], r["spend_usd"]) for r in rows] == [(pytest.approx(0.026), 0.0)] * 2
    # two attempts at once: each one's event log holds its own calls only
    calls = store.query("SELECT attempt_id, json_extract(json, '$.attempt_id') AS caller FROM events"
                        " WHERE type='llm_call'")
    assert len(calls) == 2 and all(r["attempt_id"] == r["caller"] for r in calls)
    store.close()


@pytest.mark.slow
def test_judge_calls_made_while_scoring_are_score_events_count_in_the_budget_and_replay(tmp_path: Path) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner.replay import replay_attempt
    from sysmo.runner import run_experiment
    from sysmo.store import Store

    rubric = '{"completeness": 4, "accuracy": 3, "rationality": 4, "readability": 5}'
    with FakeOpenAI(default=reply(rubric)) as server:
        judge = {"model": "openai/fake-judge", "api_base": server.base_url, "price_per_mtok": PRICE}
        # the judge aligns the components; containers by name tokens (no torch import to load MiniLM)
        summary = run_experiment(config(tmp_path, server, "judged", models=["mockllm/control"], judge=judge,
                                        scoring={"embedding": "token"},
                                        tasks=TaskSelection(benchmarks=["starter"],
                                                            ids=["starter/architecture/bike_sharing_system"])),
                                 progress=False)
        judged = server.calls
        store = Store(tmp_path / "runs" / "judged" / "results.sqlite")
        (row,) = store.query("SELECT id FROM attempts")
        events = store.events(row["id"], stage="score")
        calls = [e for e in events if e.type == "llm_call"]
        assert judged >= 1 and len(calls) == judged and {c.role for c in calls} == {"judge"}
        assert summary.cost_usd == pytest.approx(judged * 0.026)  # the generator is a free control
        assert any(e.type == "score_stage" and e.name == "judge" for e in events)

        result = replay_attempt(store, store.attempt(row["id"]))
        store.close()
    assert result.identical, result.differences
    assert server.calls == judged and result.live_model_calls == 0


@pytest.mark.slow
def test_control_attempts_of_the_multi_stage_and_tool_calling_agents_replay_identically(tmp_path: Path) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner.replay import replay_attempt
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store
    from sysmo.tools.tla import run_cache

    # code_translation is offered on TLA+ tasks only (there is code to translate there). Two runtime simulations
    # instead of SysMoBench's 20 (the defaults are pinned in tests/test_tla_cascade.py): every TLA+ stage runs.
    # The class diagrams' CLUE compares names by their tokens (no torch import to load MiniLM).
    config = ExperimentConfig(id="ctl", output_dir=tmp_path / "runs", agents=["metagpt", "openhands", "code_translation"],
                              models=["mockllm/control"], samples=1, concurrency=2,
                              scoring={"runtime.runs": 2, "embedding": "token"},
                              tasks=TaskSelection(benchmarks=["starter"], ids=[TASK, "starter/tla/spinlock"]))
    # the three agents end on the same spinlock spec: its deterministic SANY/TLC runs are made once (the run
    # cache)
    cache = tmp_path / "tla-run-cache"
    with run_cache.enabled(cache):
        run_experiment(config, progress=False)
    store = Store(tmp_path / "runs" / "ctl" / "results.sqlite")
    try:
        rows = store.query("SELECT id, agent, task_id, n_rounds FROM attempts ORDER BY agent, task_id")
        assert "code_translation" in {row["agent"] for row in rows}
        tla = [row["id"] for row in rows if row["task_id"] == "starter/tla/spinlock"]
        assert len(tla) == 3
        for row in rows:
            # The first TLA+ replay is checked and scored by SANY and TLC for real, cache off: the replayed graph
            # reproduces the tools' verdicts without any stored output. The other two end on the same spec: their
            # replays re-run the graph, the artifacts and the scoring code, with the deterministic SANY/TLC runs
            # answered by the run cache of the original run (keyed by the files: an artifact the replay changed
            # would be a cache miss, so a real run). PlantUML replays always run the real tool.
            replaying = run_cache.enabled(cache) if row["id"] in tla[1:] else contextlib.nullcontext()
            with replaying:
                result = replay_attempt(store, store.attempt(row["id"]))
            assert result.identical, (row["agent"], result.differences)
            assert result.model_calls_answered == result.model_calls_recorded >= 2 and result.score_compared
            assert row["n_rounds"] == 2  # the control's scripted mistake needed a repair
    finally:
        store.close()
