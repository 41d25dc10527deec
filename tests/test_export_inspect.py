"""``sysmo export inspect EXP --out DIR``: a real run (fake model server, real PlantUML, two feedback arms) written as
inspect_ai eval logs, one per (agent, model, arm), read back with inspect_ai's own reader: every attempt a sample
with its conversation, scores per stage and metadata; the results' numbers recomputed from the store.

Needs the extra ``inspect`` (inspect-ai): skipped without it, failed where ``SYSMO_TEST_REQUIRE_INSPECT=1`` (CI).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from export_runs import SAMPLES, TASKS, run_export_experiment
from sysmo_cli import run_sysmo

pytestmark = pytest.mark.slow

ARMS = ["diagnostics", "full"]


@pytest.fixture(scope="module")
def inspect_extra(skip_missing: Any) -> None:
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        skip_missing("inspect", "the extra inspect is not installed: pip install -e '.[inspect]'")


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory, inspect_extra: None) -> Path:
    runs = tmp_path_factory.mktemp("inspect") / "runs"
    result = run_export_experiment(runs, "insp", "--feedback", ",".join(ARMS), tasks=TASKS[:1])
    assert result.code == 0, result.output
    return runs


def test_one_log_per_agent_model_and_arm_whose_samples_are_the_attempts(experiment: Path, tmp_path: Path) -> None:
    from inspect_ai.log import list_eval_logs, read_eval_log

    from sysmo.store import Store

    out = tmp_path / "logs"
    result = run_sysmo("export", "inspect", "insp", "-o", str(experiment), "--out", str(out))
    assert result.code == 0, result.output
    assert f"inspect view --log-dir {out}" in result.output
    logs = [read_eval_log(info) for info in list_eval_logs(str(out))]
    assert len(logs) == len(ARMS)

    store = Store(experiment / "insp" / "results.sqlite")
    attempts = {a.id: store.attempt(a.id) for a in store.attempts("insp")}
    assert len(attempts) == len(ARMS) * SAMPLES
    seen = set()
    for log in logs:
        assert log.status == "success" and log.eval.model == "openai/fake-export" and log.eval.solver == "base_modeling"
        arm = log.eval.metadata["arm"]
        mine = [a for a in attempts.values() if a.arm_label == arm]
        assert len(log.samples) == len(mine) == SAMPLES
        assert {s.epoch for s in log.samples} == {a.sample_index + 1 for a in mine}
        for sample in log.samples:
            attempt = attempts[sample.metadata["attempt_id"]]
            seen.add(attempt.id)
            card = store.scorecard(attempt.id)
            assert sample.id == attempt.task_id and sample.uuid == attempt.id
            # the conversation: the task's request, the broken answer, the repair request quoting the tool, the fix
            assert [m.role for m in sample.messages] == ["system", "user", "assistant", "user", "assistant"]
            calls = [e for e in attempt.events if e.type == "llm_call" and e.stage == "attempt"]
            assert [m.text for m in sample.messages if m.role == "assistant"] == [c.text for c in calls]
            assert sample.messages[3].text == calls[1].messages[-1]["content"]
            assert [m.text for m in sample.input] == [m["content"] for m in calls[0].messages
                                                      if m["role"] != "system"]
            assert sample.messages[0].text == calls[0].messages[0]["content"]  # the system prompt
            assert sample.output.completion == calls[-1].text
            # scores per stage, as the card has them, and the outcome
            assert sample.scores["outcome"].value == attempt.status.value == "passed"
            for stage in card.stages:
                assert sample.scores[stage.stage].value == pytest.approx(stage.value)
            assert sample.metadata["seed"] == attempt.seed and sample.metadata["rounds"] == 2
            assert sample.metadata["tool_verdicts"][0].startswith("plantuml") and "failed" in sample.metadata[
                "tool_verdicts"][0]
            usage = sample.model_usage["openai/fake-export"]
            assert (usage.input_tokens, usage.output_tokens) == (attempt.prompt_tokens, attempt.completion_tokens)
        usage = log.stats.model_usage["openai/fake-export"]
        assert usage.input_tokens == sum(a.prompt_tokens for a in mine)
        # the results: pass rate over the log's attempts, each stage's mean over the samples that have it
        results = {s.name: s for s in log.results.scores}
        assert results["outcome"].metrics["pass_rate"].value == pytest.approx(
            sum(a.status.value == "passed" for a in mine) / len(mine))
        for stage in store.scorecard(mine[0].id).stages:
            values = [store.scorecard(a.id).stage(stage.stage).value for a in mine]
            assert results[stage.stage].metrics["mean"].value == pytest.approx(sum(values) / len(values))
    assert seen == set(attempts)
    store.close()


def test_an_unknown_experiment_is_one_line(inspect_extra: None, tmp_path: Path) -> None:
    result = run_sysmo("export", "inspect", "nope", "-o", str(tmp_path), "--out", str(tmp_path / "logs"))
    assert result.code == 2 and "no experiment 'nope'" in result.stderr
    assert not (tmp_path / "logs").exists()


def test_an_attempt_that_ended_in_error_and_was_not_scored_is_a_sample_with_its_error(inspect_extra: None,
                                                                                      tmp_path: Path) -> None:
    from inspect_ai.log import list_eval_logs, read_eval_log
    from test_export_spans import attempt

    from sysmo.store import Store

    store = Store(tmp_path / "runs" / "failing" / "results.sqlite")
    store.save_experiment("failing", {}, {}, False)
    store.save_attempt("failing", attempt(), {"kind": "uml_class"})  # its events: a call, a check, a failed call
    store.close()
    result = run_sysmo("export", "inspect", "failing", "-o", str(tmp_path / "runs"), "--out", str(tmp_path / "logs"))
    assert result.code == 0, result.output
    (log,) = [read_eval_log(info) for info in list_eval_logs(str(tmp_path / "logs"))]
    (sample,) = log.samples
    assert sample.error.message == "the model failed for good"
    assert list(sample.scores) == ["outcome"] and sample.scores["outcome"].value == "error"
    assert [m.role for m in sample.messages] == ["user", "assistant", "user", "assistant"]
    assert sample.messages[-1].text == "(the call failed: server said 500)"
    assert log.results.scores[0].metrics["pass_rate"].value == 0.0
