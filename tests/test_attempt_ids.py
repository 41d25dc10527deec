"""Attempt ids: distinct across experiments, stable within one; `sysmo trace` resolves ids and unique prefixes only."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sysmo.contracts.task import Task
from sysmo.cli import _wire, app
from sysmo.errors import SysmoError
from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.runner import WorkUnit
from sysmo.store import Store

TASK = Task(id="starter/tla/spin", benchmark="starter", kind="tla")


def test_the_same_unit_in_two_experiments_gets_two_ids_and_is_stable_within_one():
    first = WorkUnit(TASK, "base_modeling", "reference", 0, "exp-a")
    assert first.attempt_id == WorkUnit(TASK, "base_modeling", "reference", 0, "exp-a").attempt_id
    assert first.attempt_id != WorkUnit(TASK, "base_modeling", "reference", 0, "exp-b").attempt_id
    assert first.attempt_id != WorkUnit(TASK, "base_modeling", "reference", 1, "exp-a").attempt_id


def _experiment(runs, name: str, ids: list[str]) -> None:
    store = Store(runs / name / "results.sqlite")
    store.save_experiment(name, {}, {}, is_control=True)
    for sample, attempt_id in enumerate(ids):
        attempt = Attempt(id=attempt_id, task_id=TASK.id, agent="base_modeling", model="reference",
                          sample_index=sample, status=AttemptStatus.PASSED)
        store.save_attempt(name, attempt, {})
    store.close()


@pytest.fixture()
def runs(tmp_path):
    (tmp_path / "exp-a").mkdir()
    (tmp_path / "exp-b").mkdir()
    _experiment(tmp_path, "exp-a", ["abc111", "abd222"])
    _experiment(tmp_path, "exp-b", ["abc333"])
    return tmp_path


def _trace(runs, ref: str):
    _wire()
    return CliRunner().invoke(app, ["trace", ref, "--json", "-o", str(runs)])


def test_a_unique_prefix_resolves_across_experiments(runs):
    result = _trace(runs, "abd")
    assert result.exit_code == 0, result.output
    assert '"abd222"' in result.output


def test_an_ambiguous_prefix_is_an_error_listing_every_candidate_with_its_experiment(runs):
    with pytest.raises(SysmoError) as info:
        from sysmo.cli.runner import _find_attempt

        _find_attempt("abc", runs)
    message = str(info.value)
    assert "ambiguous" in message
    assert "abc111 (exp-a: starter/tla/spin base_modeling reference sample 0)" in message
    assert "abc333 (exp-b:" in message


def test_a_prefix_ambiguous_within_one_store_lists_the_ids(runs):
    store = Store(runs / "exp-a" / "results.sqlite")
    with pytest.raises(SysmoError, match="ambiguous: abc111, abd222"):
        store.attempt("ab")
    assert store.attempt("abc").id == "abc111"
    store.close()


def test_like_wildcards_are_not_prefixes(runs):
    store = Store(runs / "exp-a" / "results.sqlite")
    assert store.attempt_ids_matching("%") == []
    assert store.attempt_ids_matching("_bc111") == []
    store.close()
