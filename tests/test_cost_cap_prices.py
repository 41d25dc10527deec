"""A cost cap on a model without a known price: its calls count as $0, so ``--max-cost`` could never stop the
run. The run is refused before any work, saying how to price the model; without a cap it runs with a note."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, reply
from sysmo.errors import ConfigError

UNPRICED = "openai/sysmo-local-model"  # not in litellm's cost map (a model served by a local server)
DIAGRAM = "```plantuml\n@startuml\nclass Book {\n  +title: String\n}\nclass Loan\nBook -- Loan\n@enduml\n```"


def _config(tmp_path: Path, server: FakeOpenAI, id: str, **overrides):
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig

    fields = {"id": id, "output_dir": tmp_path, "agents": ["base_modeling"], "samples": 1, "max_rounds": 0,
              "score": False, "models": [{"model": UNPRICED, "api_base": server.base_url}], "checkpoints": "none",
              "tasks": TaskSelection(benchmarks=["starter"], ids=["starter/uml_class/library_loans"])}
    fields.update(overrides)
    return ExperimentConfig(**fields)


def test_a_cost_cap_on_an_unpriced_model_is_refused_before_any_work(tmp_path: Path) -> None:
    from sysmo.runner import Budget, run_experiment

    with FakeOpenAI(default=reply(DIAGRAM)) as server:
        with pytest.raises(ConfigError, match=r"--max-cost 5 cannot be kept: no price for "
                                              r"'openai/sysmo-local-model'.*price_per_mtok.*--max-total-tokens"):
            run_experiment(_config(tmp_path, server, "capped", budget=Budget(max_cost_usd=5)), progress=False)
        assert server.calls == 0 and not (tmp_path / "capped").exists()
        # an unpriced judge under a cap is refused the same way
        judge = {"model": UNPRICED, "api_base": server.base_url}
        priced = {"model": UNPRICED, "api_base": server.base_url, "price_per_mtok": [1.0, 2.0]}
        with pytest.raises(ConfigError, match="cannot be kept"):
            run_experiment(_config(tmp_path, server, "judged", models=[priced], judge=judge,
                                   budget=Budget(max_cost_usd=5)), progress=False)
        # priced in the experiment file: the cap counts its spend, and the run goes ahead
        summary = run_experiment(_config(tmp_path, server, "priced", models=[priced], budget=Budget(max_cost_usd=5)),
                                 progress=False)
        assert summary.ran == 1 and summary.cost_usd > 0 and summary.cost_notes == []
        # no cap: the run goes ahead, and its summary says the cost is not counted
        free = run_experiment(_config(tmp_path, server, "uncapped"), progress=False)
    assert free.ran == 1 and free.cost_usd == 0
    assert len(free.cost_notes) == 1 and "no price for 'openai/sysmo-local-model'" in free.cost_notes[0]


def test_the_report_and_the_viewer_name_the_models_whose_cost_was_not_counted(tmp_path: Path) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.evals.report import write_report
    from sysmo.runner import run_experiment

    # a task of its own: the first test's calls are in the LLM cache, answered with their first price
    tasks = TaskSelection(benchmarks=["starter"], ids=["starter/uml_class/fleet_rental"])
    with FakeOpenAI(default=reply(DIAGRAM)) as server:
        run_experiment(_config(tmp_path, server, "unpriced", tasks=tasks), progress=False)
        assert server.calls == 1
        control = run_experiment(_config(tmp_path, server, "control", models=["reference"], tasks=tasks),
                                 progress=False)
    report = (write_report(tmp_path / "unpriced")["markdown"]).read_text()
    assert "cost $ of openai/sysmo-local-model: not counted (litellm has no price for it" in report
    # `sysmo view` says the same beside the experiment's cost
    from sysmo.store import Store
    from sysmo.view.gather import experiment_summary, report_view

    for experiment, unpriced in (("unpriced", [UNPRICED]), ("control", [])):
        store = Store(tmp_path / experiment / "results.sqlite")
        assert experiment_summary(store, experiment).unpriced_models == unpriced
        assert [n for n in report_view(store, experiment).notes if "not counted" in n] == [
            f"cost $ of {m}: not counted (litellm has no price for it; set price_per_mtok in its role config to "
            "price it)" for m in unpriced]
        store.close()
    assert control.cost_notes == []
    assert "not counted" not in write_report(tmp_path / "control")["markdown"].read_text()
