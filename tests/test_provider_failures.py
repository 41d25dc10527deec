"""A provider that refuses every call (401 wrong key, 403, 404 unknown model) stops the run after three attempts in
a row, in one line naming the model and the cause, every stored attempt kept; rate limits and 5xx keep their
retries and never stop it; an attempt with another outcome resets the count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, http_error, reply

MODEL = "openai/gpt-4o-mini"  # priced, so no cost note
DIAGRAM = "```plantuml\n@startuml\nclass Book {\n  +title: String\n}\nclass Loan\nBook -- Loan\n@enduml\n```"
TASKS = ["starter/uml_class/library_loans", "starter/uml_class/fleet_rental"]


def _config(tmp_path: Path, server: FakeOpenAI, id: str, samples: int = 4, **overrides):
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig

    fields = {"id": id, "output_dir": tmp_path, "agents": ["base_modeling"], "samples": samples, "max_rounds": 0,
              "score": False, "concurrency": 1, "checkpoints": "none",
              "models": [{"model": MODEL, "api_base": server.base_url, "max_retries": 1, "retry_initial_s": 0.01}],
              "tasks": TaskSelection(benchmarks=["starter"], ids=TASKS)}
    fields.update(overrides)
    return ExperimentConfig(**fields)


def _stored(tmp_path: Path, experiment: str) -> list[str]:
    from sysmo.store import Store

    store = Store(tmp_path / experiment / "results.sqlite")
    try:
        return [r["status"] for r in store.query("SELECT status FROM attempts WHERE experiment_id=?", (experiment,))]
    finally:
        store.close()


@pytest.mark.parametrize(("status", "cause"), [(401, "authentication failed"), (403, "authentication failed"),
                                                (404, "was not found")])
def test_a_provider_refusing_every_call_stops_the_run_after_three_attempts(tmp_path: Path, status: int,
                                                                            cause: str) -> None:
    from sysmo.runner import run_experiment

    with FakeOpenAI(default=http_error(status, "Incorrect API key provided")) as server:
        summary = run_experiment(_config(tmp_path, server, f"refused{status}"), progress=False)
        calls = server.calls
    assert summary.planned == 8 and summary.ran == 3 and summary.errors == 3
    assert summary.provider_failure is not None and MODEL in summary.provider_failure
    assert "3 attempts in a row" in summary.provider_failure and cause in summary.provider_failure
    assert calls == 3  # never retried: one call per attempt
    assert _stored(tmp_path, f"refused{status}") == ["error"] * 3  # nothing computed is lost


def test_rate_limits_and_server_errors_keep_their_retries_and_never_stop_the_run(tmp_path: Path) -> None:
    from sysmo.runner import run_experiment

    with FakeOpenAI(default=http_error(503, "overloaded")) as server:
        summary = run_experiment(_config(tmp_path, server, "overloaded", samples=2), progress=False)
        calls = server.calls
    assert summary.ran == 4 and summary.errors == 4 and summary.provider_failure is None
    assert calls == 8  # each attempt: its call and one retry (max_retries 1)


def test_an_attempt_with_another_outcome_resets_the_count(tmp_path: Path) -> None:
    from sysmo.runner import run_experiment

    refused = http_error(401, "Incorrect API key provided")
    with FakeOpenAI() as server:
        server.push(refused, refused, reply(DIAGRAM), refused, refused, reply(DIAGRAM), refused, refused)
        summary = run_experiment(_config(tmp_path, server, "flaky"), progress=False)
    assert summary.ran == 8 and summary.errors == 6 and summary.provider_failure is None


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path: Path) -> None:
    with FakeOpenAI(default=http_error(401, "Incorrect API key provided")) as server:
        done = subprocess.run(
            [sys.executable, "-m", "sysmo.cli", "run", "-a", "base_modeling", "-m", MODEL, "--api-base",
             server.base_url, "-b", "starter", "--kind", "uml_class", "-n", "2", "--concurrency", "1", "--no-score",
             "--no-report", "--no-progress", "--id", "wrongkey", "-o", str(tmp_path)],
            capture_output=True, text=True, timeout=300, env={**os.environ, "OPENAI_API_KEY": "sk-wrong"},
            stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert "'openai/gpt-4o-mini' failed 3 attempts in a row" in errors[0] and "(401)" in errors[0]
    assert "sysmo run --resume wrongkey" in errors[0]
    assert _stored(tmp_path, "wrongkey") == ["error"] * 3


def test_a_retry_wait_is_shown_on_the_progress_output(tmp_path: Path, capsys) -> None:
    from sysmo.runner import run_experiment

    from sysmo.benchmarks.selection import TaskSelection

    with FakeOpenAI() as server:
        server.push(http_error(503, "overloaded"), reply(DIAGRAM))
        config = _config(tmp_path, server, "waited", samples=1,
                         models=[{"model": MODEL, "api_base": server.base_url, "max_retries": 2,
                                  "retry_initial_s": 0.4}],
                         tasks=TaskSelection(benchmarks=["starter"], ids=TASKS[:1]))
        summary = run_experiment(config, progress=True)
    assert summary.ran == 1 and summary.errors == 0
    err = capsys.readouterr().err
    assert "retrying openai/gpt-4o-mini (HTTP 503) in 0." in err, err
