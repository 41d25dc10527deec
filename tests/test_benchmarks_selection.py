"""Task selection: filters by family, kind, domain, difficulty, grammar, id globs, ablation; seeded sampling."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sysmo.benchmarks import r2abench, sysmbench, sysmobench
from sysmo.benchmarks.selection import TaskSelection, selection_from_options
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def tasks(shared_benchmarks: Path) -> list[Task]:
    return (
        sysmobench.load(shared_benchmarks / "sysmobench")
        + sysmbench.load(shared_benchmarks / "sysmbench")
        + r2abench.load(FIXTURES / "r2abench")
    )


def _ids(selected: list[Task]) -> list[str]:
    return [t.id for t in selected]


def test_empty_selection_keeps_everything_but_non_full_ablations(tasks: list[Task]) -> None:
    chosen = TaskSelection().apply(tasks)
    assert len(chosen) == 11 + 151 + 2
    assert {t.labels.get("ablation") for t in chosen} == {None, "full"}
    assert len(TaskSelection(ablations="*").apply(tasks)) == 11 + 151 + 6
    minimal = TaskSelection(benchmarks="r2abench", ablations=["min"]).apply(tasks)
    assert _ids(minimal) == ["r2abench/campus_parking/min", "r2abench/clinic_booking/min"]


def test_filters_by_family_and_kind(tasks: list[Task]) -> None:
    assert len(TaskSelection(benchmarks=["sysmobench"]).apply(tasks)) == 11
    assert {t.kind for t in TaskSelection(kinds=["architecture"]).apply(tasks)} == {TaskKind.ARCHITECTURE}
    assert TaskSelection(benchmarks=["oodeval"]).apply(tasks) == []


def test_filters_by_domain_case_insensitively_with_globs(tasks: list[Task]) -> None:
    assert len(TaskSelection(domains=["vehicle traffic"]).apply(tasks)) == 108
    assert len(TaskSelection(domains=["distrib*"]).apply(tasks)) == 7
    assert len(TaskSelection(domains=["Aerospace", "Medical Health"]).apply(tasks)) == 4


def test_filters_by_difficulty_levels_and_ranges(tasks: list[Task]) -> None:
    assert len(TaskSelection(difficulties=[4, 5]).apply(tasks)) == 12
    assert len(TaskSelection(difficulties="1-2").apply(tasks)) == 127
    assert len(TaskSelection(difficulties=["3", "5"]).apply(tasks)) == 18


def test_filters_by_key_grammar_and_id_globs(tasks: list[Task]) -> None:
    expression = TaskSelection(grammars=["expression"]).apply(tasks)
    assert len(expression) == 18 and all(t.key_grammar == ["Expression"] for t in expression)
    assert _ids(TaskSelection(ids=["sysmbench/1?"]).apply(tasks)) == [f"sysmbench/{i}" for i in range(10, 20)]
    assert _ids(TaskSelection(ids=["sysmobench/*", "sysmbench/7"], exclude_ids=["*/etcd"]).apply(tasks))[:2] == [
        "sysmbench/7", "sysmobench/curp"]
    combined = TaskSelection(benchmarks="sysmbench", difficulties=[1], grammars=["part*"]).apply(tasks)
    assert combined and all(t.difficulty == 1 and t.key_grammar[0].lower().startswith("part") for t in combined)


def test_sampling_is_deterministic_per_seed_and_independent_of_order(tasks: list[Task]) -> None:
    first = _ids(TaskSelection(sample=10, seed=1).apply(tasks))
    assert len(first) == 10
    assert _ids(TaskSelection(sample=10, seed=1).apply(list(reversed(tasks)))) == first
    assert _ids(TaskSelection(sample=10, seed=2).apply(tasks)) != first
    # a larger sample with the same seed keeps the smaller one's tasks
    assert set(first) <= set(_ids(TaskSelection(sample=20, seed=1).apply(tasks)))
    assert len(TaskSelection(sample=500).apply(tasks)) == 164


def test_sampling_per_benchmark(tasks: list[Task]) -> None:
    chosen = TaskSelection(sample=2, sample_per="benchmark", seed=5).apply(tasks)
    assert sorted(t.benchmark for t in chosen) == ["r2abench"] * 2 + ["sysmbench"] * 2 + ["sysmobench"] * 2


def test_selection_round_trips_through_yaml(tasks: list[Task]) -> None:
    text = "benchmarks: sysmbench\ndifficulties: [1-2]\ndomains: [Vehicle Traffic]\nsample: 5\nseed: 9\n"
    selection = TaskSelection.model_validate(yaml.safe_load(text))
    again = TaskSelection.model_validate(yaml.safe_load(yaml.safe_dump(selection.model_dump(mode="json"))))
    assert again == selection
    assert _ids(again.apply(tasks)) == _ids(selection.apply(tasks)) and len(selection.apply(tasks)) == 5


def test_invalid_selection_is_a_config_error_not_a_traceback() -> None:
    with pytest.raises(ConfigError, match="difficulties"):
        selection_from_options(difficulties=["hard"])
    with pytest.raises(ConfigError, match="kinds"):
        selection_from_options(kinds=["uml"])
    with pytest.raises(ConfigError, match="sampel"):
        selection_from_options(sampel=3)
