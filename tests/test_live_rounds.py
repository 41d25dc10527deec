"""An attempt's rounds while it runs (``graphs.live``): a real control run writes each attempt's file as its
rounds finish, once the attempt has run ``PUBLISH_AFTER_S``, removes it once the attempt is stored and leaves no
file behind; an attempt done sooner gets none; the viewer lists the attempts running now and shows a running
attempt's rounds, then its full page once stored."""

from __future__ import annotations

import asyncio
from pathlib import Path

from starlette.testclient import TestClient

from sysmo.contracts.attempt import Attempt, AttemptStatus, Round
from sysmo.graphs import live
from sysmo.store import AttemptRecord, Store
from sysmo.view.app import create_app


def _control_run(tmp_path: Path, monkeypatch, after_s: float) -> list[tuple[str, int]]:
    """The live files a control run writes (attempt id, rounds), with attempts published after ``after_s``."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment

    written: list[tuple[str, int]] = []
    real = live._write
    monkeypatch.setattr(live, "_write", lambda path, attempt: written.append((attempt.id, len(attempt.rounds)))
                        or real(path, attempt))
    monkeypatch.setattr(live, "PUBLISH_AFTER_S", after_s)
    config = ExperimentConfig(id="livecheck", output_dir=tmp_path, agents=["base_modeling"], models=["mockllm/control"],
                              tasks=TaskSelection(ids=["starter/uml_class/library_loans"]), samples=1, score=False)
    summary = run_experiment(config, progress=False)
    assert summary.passed == 1
    assert not (tmp_path / "livecheck" / live.LIVE_DIR).exists()  # stored, then the run over: nothing left
    return written


def test_a_control_run_publishes_each_round_as_it_finishes(tmp_path: Path, monkeypatch) -> None:
    written = _control_run(tmp_path, monkeypatch, after_s=0.0)  # published from its start
    assert len({a for a, _ in written}) == 1  # one attempt, its file written as each round finished
    # the control answers with a scripted mistake, then the reference: round 0 fails, round 1 passes
    assert [n for a, n in written] == [0, 1, 2]


def test_an_attempt_done_before_the_delay_gets_no_file(tmp_path: Path, monkeypatch) -> None:
    assert live.PUBLISH_AFTER_S == 2.0  # the runner's delay
    # a delay no attempt of this test reaches (its first tool check may start a tool server on a busy machine)
    assert _control_run(tmp_path, monkeypatch, after_s=60.0) == []


def test_a_long_attempt_is_published_after_the_delay_then_at_each_round(tmp_path: Path) -> None:
    attempt = live.LiveAttempt(id="slow0attempt", task_id="starter/uml_class/library_loans", agent="base_modeling",
                               model="mockllm/control")
    path = live.live_path(tmp_path, attempt.id)

    def on_disk() -> int | None:
        return len(live.LiveAttempt.model_validate_json(path.read_text()).rounds) if path.exists() else None

    async def attempt_of_two_rounds() -> list[int | None]:
        seen = []
        with live.publishing(tmp_path, attempt, after_s=0.2):
            live.round_finished([Round(index=0, extraction_error="no block")])  # before the delay: kept, not written
            seen.append(on_disk())
            await asyncio.sleep(0.4)  # the delay passed: the file, with the round done so far
            seen.append(on_disk())
            live.round_finished([Round(index=0), Round(index=1, kind="repair")])  # now written as it finishes
            seen.append(on_disk())
        return seen

    assert asyncio.run(attempt_of_two_rounds()) == [None, 1, 2]
    assert path.exists()  # until the attempt is stored
    live.stored(tmp_path, attempt.id)
    assert not path.exists()


def _running_experiment(runs: Path) -> Store:
    store = Store(runs / "exp" / "results.sqlite")
    store.save_experiment("exp", {"agents": ["base_modeling"], "models": ["mockllm/control"], "samples": 1,
                                  "tasks": {"ids": []}}, {"planned_attempts": 2}, is_control=True)
    return store


def test_the_viewer_shows_a_running_attempts_rounds_then_its_page(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    store = _running_experiment(runs)
    attempt = live.LiveAttempt(id="abc123running", task_id="starter/uml_class/library_loans", agent="base_modeling",
                               model="mockllm/control")
    with live.publishing(runs / "exp", attempt):
        live.round_finished([Round(index=0, response="@startuml\nclass A\n@enduml", extraction_error="no block")])
    client = TestClient(create_app(runs), base_url="http://127.0.0.1")
    listing = client.get("/e/exp")
    assert 'id="running-now"' in listing.text and "abc123running" in listing.text and "1 round(s) done" in listing.text
    page = client.get("/e/exp/a/abc123running")
    assert page.status_code == 200 and 'id="round-0"' in page.text and "no model in the reply: no block" in page.text
    assert 'data-live="/e/exp/live.json"' in page.text  # the page follows the run
    stamp = client.get("/e/exp/live.json").json()["stamp"]
    with live.publishing(runs / "exp", attempt):
        live.round_finished([Round(index=0), Round(index=1, kind="repair")])
    assert client.get("/e/exp/live.json").json()["stamp"] != stamp  # a round finished: the page reloads
    assert 'id="round-1"' in client.get("/e/exp/a/abc123running").text
    store.save_attempts("exp", [AttemptRecord.of(Attempt(
        id="abc123running", task_id="starter/uml_class/library_loans", agent="base_modeling", model="mockllm/control",
        status=AttemptStatus.PASSED, rounds=[Round(index=0), Round(index=1, kind="repair")]),
        {"benchmark": "starter", "kind": "uml_class"})])
    live.stored(runs / "exp", "abc123running")
    store.close()
    stored = client.get("/e/exp/a/abc123running")
    assert stored.status_code == 200 and 'id="live-status"' not in stored.text and 'id="outcome"' in stored.text
    assert 'id="running-now"' not in client.get("/e/exp").text
