"""``replay/r2abench:<model>[/<workflow>]``: the published R2ABench diagrams answer the SRS tasks through ``sysmo run``.

The checkout is a small one in the package's layout (``tests/r2abench_checkout.py``); PlantUML is real.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from r2abench_checkout import BROKEN, PREDICTED, PREDICTED_LOOSE, write_checkout
from sysmo.errors import ConfigError, DataMissingError, NotCoveredError
from sysmo.llm import LLM, CallContext
from sysmo.llm.replay import ReplayProvider
from sysmo.llm.roles import model_kind


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch) -> Path:
    root = write_checkout(tmp_path / "R2ABench")
    monkeypatch.setenv("SYSMO_R2ABENCH_DIR", str(root))
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    return root


def test_the_published_diagram_answers_the_srs_task_and_nothing_else(checkout: Path) -> None:
    llm = LLM("replay/r2abench:gpt-5", cache=False)
    answer = llm.complete([{"role": "user", "content": "draw it"}], context=CallContext(task_id="r2abench/library_loans/srs"))
    assert answer.text == PREDICTED and answer.provider == "replay" and answer.cost_usd == 0
    assert model_kind("replay/r2abench:gpt-5/openhands") == "replay"
    for task in ("r2abench/library_loans/full", "r2abench/elsewhere/srs", "sysmbench/1"):
        with pytest.raises(NotCoveredError, match="not covered by replay source r2abench:gpt-5/direct@2:"):
            llm.complete([{"role": "user", "content": "x"}], context=CallContext(task_id=task))


def test_workflows_match_the_output_folders_by_name_or_unique_prefix(checkout: Path) -> None:
    openhands = ReplayProvider.from_name("replay/r2abench:GPT-5/OpenHands")
    assert openhands.source.workflow == "openhands" and openhands.replies("r2abench/library_loans/srs") == [PREDICTED_LOOSE]
    assert openhands.source.task_ids() == ["r2abench/library_loans/srs"]
    assert ReplayProvider.from_name("replay/r2abench:deepseek-v3.2/dir").replies("r2abench/library_loans/srs") == [BROKEN]
    with pytest.raises(ConfigError, match=r"no R2ABench workflow 'metagpt'.*direct, openhands"):
        ReplayProvider.from_name("replay/r2abench:gpt-5/metagpt")
    with pytest.raises(ConfigError, match=r"no R2ABench model with predictions for direct 'gemini'.*deepseek-v3.2, gpt-5"):
        ReplayProvider.from_name("replay/r2abench:gemini")


def test_the_source_label_says_which_predictions_are_present(checkout: Path) -> None:
    before = ReplayProvider.from_name("replay/r2abench:gpt-5").source.label
    assert before.startswith("r2abench:gpt-5/direct@2:")
    extra = checkout / "Output" / "E-R2A" / "direct" / "gpt-5" / "third"
    extra.mkdir()
    (extra / "predicted.puml").write_text(PREDICTED)
    after = ReplayProvider.from_name("replay/r2abench:gpt-5").source.label
    assert after.startswith("r2abench:gpt-5/direct@3:") and after != before
    (extra / "predicted.puml").write_text(PREDICTED_LOOSE)  # same projects, another diagram: another digest
    assert ReplayProvider.from_name("replay/r2abench:gpt-5").source.label not in (before, after)


def test_without_a_checkout_the_error_says_where_it_looked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SYSMO_R2ABENCH_DIR", raising=False)
    with pytest.raises(DataMissingError, match=r"r2abench predictions .*not found at .*r2abench/Output/E-R2A"):
        ReplayProvider.from_name("replay/r2abench:gpt-5", tmp_path)


@pytest.mark.slow
def test_a_replayed_run_scores_the_published_diagrams_and_leaves_the_rest_not_covered(checkout: Path, tmp_path: Path) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    config = ExperimentConfig(id="r2a-replay", output_dir=tmp_path / "runs", agents=["base_modeling"],
                              models=["replay/r2abench:gpt-5/openhands", "replay/r2abench:deepseek-v3.2"],
                              samples=1, max_rounds=0, concurrency=2, checkpoints="none",
                              # scored, names compared by their tokens: no torch import to load MiniLM
                              scoring={"embedding": "token"},
                              tasks=TaskSelection(benchmarks=["r2abench"], ablations=["srs"]))
    summary = run_experiment(config, progress=False)
    assert summary.not_covered == 2  # recipe_share has no prediction from either model
    store = Store(tmp_path / "runs" / "r2a-replay" / "results.sqlite")
    try:
        attempts = {(a.model, a.task_id): a for a in store.attempts(summary.experiment_id)}
    finally:
        store.close()
    covered = attempts[("replay/r2abench:gpt-5/openhands", "r2abench/library_loans/srs")]
    assert covered.rounds[0].response == PREDICTED_LOOSE and covered.rounds[0].check.ok
    broken = attempts[("replay/r2abench:deepseek-v3.2", "r2abench/library_loans/srs")]
    assert broken.rounds[0].response == BROKEN and not broken.rounds[0].check.ok
    assert attempts[("replay/r2abench:gpt-5/openhands", "r2abench/recipe_share/srs")].status.value == "not_covered"


@pytest.mark.slow
def test_sysmo_reproduce_r2abench_goes_through_the_replay_and_agrees_with_the_files(checkout: Path, tmp_path: Path) -> None:
    from r2abench_checkout import COLUMNS, EXACT, LOOSE
    from sysmo.reproduce.r2abench import reproduce

    replayed = reproduce(checkout, output_dir=tmp_path / "repro")
    files = reproduce(checkout, from_files=True)
    assert replayed.experiment_dir and (Path(replayed.experiment_dir) / "results.sqlite").is_file()
    assert (replayed.rows_in_csv, replayed.rescored, replayed.missing) == (5, 4, 1)
    assert replayed.missing_rows == [{"workflow": "direct", "model": "gpt-5", "project": "elsewhere",
                                      "why": "no reference (Dataset/E-R2A/*/<project>/AD/ad.puml) in the checkout"}]
    rows = {(r["workflow"], r["model"], r["sample_id"]): r for r in replayed.per_row}
    assert all(r["attempt_id"] for r in rows.values())
    for column in COLUMNS:
        assert rows[("direct", "gpt-5", "recipe_share")][column] == pytest.approx(EXACT[column]), column
        assert rows[("openhands", "gpt-5", "library_loans")][column] == pytest.approx(LOOSE[column]), column
    assert rows[("direct", "deepseek-v3.2", "library_loans")]["l0_valid"] == 0.0
    for ours, theirs in zip(replayed.columns, files.columns, strict=True):
        assert (ours.column, ours.n, ours.ours, ours.published) == (theirs.column, theirs.n, theirs.ours, theirs.published)
        assert ours.mean_abs_diff == pytest.approx(0.0, abs=1e-4) and ours.n >= 3
    again = reproduce(checkout, output_dir=tmp_path / "repro")  # the stored attempts are resumed, not re-run
    assert again.experiment_dir == replayed.experiment_dir
    assert [r["attempt_id"] for r in again.per_row] == [r["attempt_id"] for r in replayed.per_row]

    # `sysmo reproduce all`: the same experiment, each row linked to its attempt
    from sysmo.reproduce.registry import ReproduceOptions, markdown, run_reproduction

    rep = run_reproduction("r2abench", ReproduceOptions(output_dir=tmp_path / "repro"))  # $SYSMO_R2ABENCH_DIR
    assert rep.error is None and rep.experiments == [replayed.experiment_dir]
    table, rows = rep.tables
    assert table.agreement == (9, 9) and rows.agreement[0] == rows.agreement[1] > 0
    linked = {e.attempts[0] for e in rows.row_evidence if e and e.attempts}
    assert linked == {r["attempt_id"] for r in replayed.per_row}
    assert "sysmo trace" in markdown([rep]) and "4 of 5 CSV rows re-scored (1: no reference" in markdown([rep])
