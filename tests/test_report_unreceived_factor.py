"""A temperature ablation on ``openai/gpt-5`` (which takes only temperature 1: litellm drops the rest) compares
identical requests: the report and the viewer say so and leave its paired rows out, while the same ablation on a
model that takes the temperature keeps them; ``sysmo trace`` and the attempt page show what the provider received.
Driven by the fake OpenAI server with litellm's real request building, checked by the real PlantUML."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from fake_openai import FakeOpenAI, reply
from sysmo_cli import run_sysmo

UML = ["starter/uml_class/library_loans", "starter/uml_class/hotel_booking"]
DIAGRAM = "```plantuml\n@startuml\nclass Book {\n  +title: String\n}\nclass Loan\nBook -- Loan\n@enduml\n```"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_a_factor_the_provider_dropped_is_named_and_not_tested_on_identical_conditions(tmp_path: Path) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.evals.report import write_report
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store
    from sysmo.view.gather import attempt_view, report_view

    with FakeOpenAI(default=reply(DIAGRAM)) as server:
        models = [{"model": "openai/gpt-5", "api_base": server.base_url},
                  {"model": "openai/fake-model", "api_base": server.base_url}]
        config = ExperimentConfig(id="temps", output_dir=tmp_path / "runs", agents=["base_modeling"], models=models,
                                  samples=2, score=False, concurrency=4, temperature=[0.2, 0.7],
                                  tasks=TaskSelection(benchmarks=["starter"], ids=UML))
        summary = run_experiment(config, progress=False)
        bodies = list(server.requests)
    assert summary.ran == 2 * 2 * 2 * 2  # models x temperatures x tasks x samples
    # what the servers received: gpt-5 no temperature in either arm, the other model each arm's own
    assert not any("temperature" in b for b in bodies if b["model"] == "gpt-5")
    assert {b["temperature"] for b in bodies if b["model"] == "fake-model"} == {0.2, 0.7}

    experiment = tmp_path / "runs" / "temps"
    write_report(experiment)
    md = (experiment / "report" / "report.md").read_text()
    note = ("temperature had no effect on openai/gpt-5: its provider received no temperature in any arm (0.2, 0.7); "
            "litellm: ")
    assert note in md and "Only temperature=1 is supported" in md
    assert "temperature had no effect on openai/fake-model" not in md
    paired = pd.read_csv(experiment / "report" / "paired.csv")
    temperature = paired[paired["factor"] == "temperature"]
    # the one temperature row left is the model that received it; gpt-5's would compare identical requests
    assert list(temperature["held_fixed"]) == ["model=openai/fake-model"]
    assert list(temperature["level"].astype(str)) == ["0.7"]

    store = Store(experiment / "results.sqlite")
    try:
        view = report_view(store, "temps")
        assert note in view.paired_note
        shown = [row for table in view.paired for row in table.rows]
        assert not any("model=openai/gpt-5" in cell for row in shown for cell in row if "0.7 vs 0.2" in row)
        gpt5 = next(r["id"] for r in store.query("SELECT id FROM attempts WHERE model='openai/gpt-5' "
                                                 "AND temperature=0.7 LIMIT 1"))
        page = attempt_view(store, gpt5)
    finally:
        store.close()
    assert page.dropped_params.startswith("temperature in 1 of 1 calls (gpt-5 doesn't support temperature=0.7")
    (call,) = page.model_calls
    assert call.requested.startswith("temperature 0.7") and call.dropped
    assert "dropped: temperature" in call.received and "temperature 0.7" not in call.received

    # the pages themselves: the attempt page and the report page
    from starlette.testclient import TestClient
    from sysmo.view.app import create_app

    viewer = TestClient(create_app(tmp_path / "runs"), base_url="http://localhost")
    attempt_page = viewer.get(f"/e/temps/a/{gpt5}").text
    assert 'id="dropped-params"' in attempt_page and "received: seed" in attempt_page
    assert "temperature had no effect on openai/gpt-5" in viewer.get("/e/temps/report").text

    trace = run_sysmo("trace", gpt5, "-o", str(tmp_path / "runs"), env={"COLUMNS": "200"})
    assert trace.code == 0, trace.output
    assert "dropped by the provider" in trace.stdout and "the provider received:" in trace.stdout
    assert "temperature in 1 of 1 calls" in trace.stdout


def test_without_unreceived_drops_the_factors_rows_of_that_model_alone_and_adjusts_the_rest_again() -> None:
    from sysmo.evals.paired import PairedRow, adjusted
    from sysmo.evals.provider_params import UnreceivedFactor, without_unreceived

    def row(factor: str, held: str, p: float, family: str = "uml_class") -> PairedRow:
        return PairedRow(family=family, factor=factor, baseline="a", level="b", held_fixed=held, n_pairs=10,
                         pass_baseline=0.5, pass_level=0.6, level_only=3, baseline_only=1, p_mcnemar=p,
                         delta_pass=0.1, delta_pass_ci_low=0.0, delta_pass_ci_high=0.2,
                         first_answer_parses_baseline=None, first_answer_parses_level=None,
                         first_answer_parses_level_only=None, first_answer_parses_baseline_only=None,
                         p_mcnemar_first_answer_parses=None, first_answer_passes_baseline=0.5,
                         first_answer_passes_level=0.5, first_answer_passes_level_only=0,
                         first_answer_passes_baseline_only=0, p_mcnemar_first_answer_passes=1.0, score_metric=None, n_score_pairs=0, delta_score=None,
                         delta_score_ci_low=None, delta_score_ci_high=None, p_wilcoxon=None)

    gpt5 = UnreceivedFactor(factor="temperature", model="openai/gpt-5", levels=["0.2", "0.7"], received="none",
                            reason="")
    frame = pd.DataFrame({"kind": ["uml_class", "uml_class", "tla"], "model": ["openai/gpt-5", "m2", "openai/gpt-5"]})
    rows = adjusted([row("temperature", "model=openai/gpt-5", 0.01), row("temperature", "model=m2", 0.02),
                     row("feedback", "model=openai/gpt-5", 0.03), row("temperature", "", 0.04, family="tla")])
    kept = without_unreceived(rows, [gpt5], frame)
    # gpt-5's temperature rows go (held fixed, or the tla family's only model); its feedback row and m2's stay
    assert [(r.factor, r.held_fixed, r.family) for r in kept] == [("temperature", "model=m2", "uml_class"),
                                                                   ("feedback", "model=openai/gpt-5", "uml_class")]
    assert [r.p_mcnemar_adjusted for r in kept] == [0.04, 0.04]  # Holm over the two rows left, not four
    assert without_unreceived(rows, [], frame) == rows


def test_compare_names_a_factor_the_provider_dropped_across_experiments_and_leaves_its_rows_out(
        tmp_path: Path) -> None:
    """Two experiments differing only in --temperature (0.2, 0.7) on gpt-5 and on a model that takes it: ``sysmo
    compare`` finds from the stored calls that gpt-5's provider received no temperature in either, says so in
    compare.md and the console, and pairs only the other model's attempts."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, run_experiment

    runs = tmp_path / "runs"
    with FakeOpenAI(default=reply(DIAGRAM)) as server:
        models = [{"model": "openai/gpt-5", "api_base": server.base_url},
                  {"model": "openai/fake-model", "api_base": server.base_url}]
        for name, temperature in (("cool", 0.2), ("warm", 0.7)):
            run_experiment(ExperimentConfig(id=name, output_dir=runs, agents=["base_modeling"], models=models,
                                            samples=2, score=False, concurrency=4, temperature=[temperature],
                                            tasks=TaskSelection(benchmarks=["starter"], ids=UML)), progress=False)
        bodies = list(server.requests)
    assert not any("temperature" in b for b in bodies if b["model"] == "gpt-5")
    assert {b["temperature"] for b in bodies if b["model"] == "fake-model"} == {0.2, 0.7}

    out = tmp_path / "out"
    done = run_sysmo("compare", "cool", "warm", "-o", str(runs), "--out", str(out), env={"COLUMNS": "250"})
    assert done.code == 0, done.output
    note = ("temperature had no effect on openai/gpt-5: its provider received no temperature in any arm (0.2, 0.7); "
            "litellm: ")
    md = (out / "compare.md").read_text()
    assert note in md and "Only temperature=1 is supported" in md
    assert note in " ".join(done.stdout.split())
    assert "temperature had no effect on openai/fake-model" not in md + done.stdout
    paired = pd.read_csv(out / "paired.csv")
    # gpt-5's row would compare identical requests: only the model that received the temperature is left
    assert list(paired["factor"]) == ["temperature"]
    assert list(paired["held_fixed"]) == ["model=openai/fake-model"] and list(paired["n_pairs"]) == [4]
