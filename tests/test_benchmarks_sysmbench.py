"""SysMBench loader: 151 tasks, id vs json_index alignment, difficulty/domain/grammar labels, reference validity."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from sysmo.contracts.artifact import Language
from sysmo.benchmarks import sysmbench
from sysmo.contracts.task import Task, TaskKind


@pytest.fixture(scope="module")
def root(shared_benchmarks: Path) -> Path:
    return shared_benchmarks / "sysmbench"


@pytest.fixture(scope="module")
def tasks(root: Path) -> list[Task]:
    return sysmbench.load(root)


def _num(task: Task) -> int:
    return int(task.id.split("/")[1])


def test_loads_151_sysml_tasks_in_id_order(tasks: list[Task]) -> None:
    assert len(tasks) == 151
    assert [_num(t) for t in tasks] == list(range(1, 152))
    assert all(t.kind is TaskKind.SYSML and t.references.model.language is Language.SYSML for t in tasks)


def test_json_index_follows_upstream_dataset_json_order(tasks: list[Task], root: Path) -> None:
    upstream = json.loads((root / "upstream_json" / "dataset.json").read_text(encoding="utf-8"))
    assert sorted(t.labels["json_index"] for t in tasks) == list(range(151))
    for t in tasks:
        row = upstream[t.labels["json_index"]]
        assert row["design"] == t.references.model.main_text
        assert row["nl"] == t.inputs.requirement
    # folder names sort as strings upstream: "10" < "100" < ... < "11"
    by_id = {_num(t): t.labels["json_index"] for t in tasks}
    assert by_id[1] == 0 and by_id[10] == 9 and by_id[100] == 10 and by_id[11] == 20
    assert sum(by_id[i] != i - 1 for i in by_id) > 100


def test_reference_of_id_n_is_its_sample_design_file(tasks: list[Task], root: Path) -> None:
    newline_only = []
    for t in tasks:
        folder = sysmbench.sample_folder(root, t)
        assert int(folder.name) == _num(t)
        on_disk = (folder / "design.sysml").read_text(encoding="utf-8")
        if on_disk != t.references.model.main_text:
            assert on_disk == t.references.model.main_text + "\n"
            newline_only.append(_num(t))
    # dataset.json drops the final newline of these six design.sysml files
    assert newline_only == [29, 129, 130, 131, 135, 148]


def test_difficulty_distribution_is_63_64_12_6_6(tasks: list[Task]) -> None:
    assert Counter(t.difficulty for t in tasks) == {1: 63, 2: 64, 3: 12, 4: 6, 5: 6}


def test_domains_and_key_grammar_labels(tasks: list[Task]) -> None:
    domains = Counter(t.domain for t in tasks)
    assert len(domains) == 13 and domains["Vehicle Traffic"] == 108
    assert all(len(t.key_grammar) == 1 for t in tasks)
    grammars = Counter(g for t in tasks for g in t.key_grammar)
    assert len(grammars) == 47 and grammars["Expression"] == 18
    assert tasks[0].key_grammar == ["Attribute"]


def test_reference_validity_labels_from_opensysml_run(tasks: list[Task]) -> None:
    assert sum(t.labels["reference_valid"] for t in tasks) == 121
    t53 = tasks[52]
    assert t53.labels["reference_valid"] is False and t53.labels["reference_n_errors"] > 0
    assert t53.labels["reference_diagnostics"]
