"""Gold controls on SysMoBench's PGo reference specs with their real traces: each stage scored on its own.

Pinned here: syntax, runtime and conformance at 1.0 for dqueue and locksvc, conformance and syntax at 1.0 for
raftkvs (PGo's ``AllStrings <- __all_strings`` is each run's logged strings; every shipped run's trace accepted),
the invariants of dqueue at 1.0;
PlusCal's ``Terminating`` (stutter-only, never fires in servers that loop forever) is excused and listed.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sysmo.benchmarks import sysmobench
from sysmo.contracts.task import Task
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.cascades import tla
from sysmo.evals.metrics.tla_runtime import stutter_only
from sysmo.tools.tla.pgo_trace import all_strings_constants, validation_cfg

SHIPPED_RUNS = {"dqueue": 4, "locksvc": 22, "raftkvs": 2}  # pgo/<t>/traces_found/<run>/: one merged trace each
OPTIONS = {"runtime.runs": 2, "invariants.timeout_s": 60, "conformance.timeout_s": 300}


@pytest.fixture(scope="module")
def tasks(shared_benchmarks: Path) -> dict[str, Task]:
    return {t.id.rsplit("/", 1)[-1]: t for t in sysmobench.load(shared_benchmarks / "sysmobench")}


@pytest.fixture(scope="module")
def stages(tasks: dict[str, Task]) -> dict[tuple[str, str], object]:
    ctx = ScoringContext(options=OPTIONS)
    wanted = {"dqueue": ("syntax", "runtime", "conformance", "invariants"),
              "locksvc": ("syntax", "runtime", "conformance"), "raftkvs": ("syntax", "conformance")}
    keys = [(name, stage) for name, names in wanted.items() for stage in names]
    # the stages are independent: two at a time, longest first (raftkvs's conformance is most of the time)
    keys.sort(key=lambda key: (key != ("raftkvs", "conformance"), key[1] != "invariants"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = pool.map(lambda key: getattr(tla, f"{key[1]}_stage")(tasks[key[0]].references.model,
                                                                       tasks[key[0]], ctx), keys)
        return dict(zip(keys, found))


def test_all_strings_substitution_is_given_by_the_traces(tasks: dict[str, Task]) -> None:
    validate = Path(tasks["raftkvs"].references.extra["pgo_validate_cfg"]).read_text()
    assert all_strings_constants(validate) == ["AllStrings"]
    assert "__all_strings" not in validation_cfg(None, validate)


def test_terminating_is_the_only_stutter_only_action(tasks: dict[str, Task]) -> None:
    text = tasks["locksvc"].references.model.main_text
    assert stutter_only(text) >= {"Terminating"}
    assert not stutter_only(text) & {"serverLoop", "serverReceive", "acquireLock", "unlock"}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "stage"), [("dqueue", s) for s in ("syntax", "runtime", "conformance", "invariants")]
                         + [("locksvc", s) for s in ("syntax", "runtime", "conformance")]
                         + [("raftkvs", s) for s in ("syntax", "conformance")])
def test_pgo_gold_stage_scores_one(stages: dict[tuple[str, str], object], name: str, stage: str) -> None:
    result = stages[(name, stage)]
    assert (result.value, result.outcome) == (1.0, "ok"), result.detail
    if stage == "runtime":
        assert result.detail["excused"] == ["Terminating"] and result.detail["uncovered"] == []
    if stage == "conformance":  # every shipped run's trace replayed to its last line, mapped by name alone
        assert result.detail["mapping"]["source"] == "names" and result.detail["mapping"]["notes"] == []
        assert result.metrics["traces"] == result.metrics["accepted"] == SHIPPED_RUNS[name]
        assert all(t["accepted"] and t["lines"] > 2 for t in result.detail["traces"])
