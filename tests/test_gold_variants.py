"""The gold-model robustness control: renamed and re-grained gold specs keep full marks on every stage.

Ten variants each of the starter spinlock and of SysMoBench's PGo dqueue (real traces): variables, actions and
constants renamed (deterministically, see ``gold_variants``), actions merged and split; the mapping of trace
names is the deterministic matcher's when names are kept, else the scripted helper's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gold_variants import ScriptedHelper, Variant, merge_actions, split_action, variant
from sysmo.benchmarks import sysmobench
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.contracts.task import Task
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.cascades import tla
from sysmo.evals.metrics import tla_conformance
from sysmo.tools.tla import trace_validation as tv

STAGES = ("syntax", "runtime", "conformance", "invariants")
OPTIONS = {"runtime.runs": 1, "invariants.max_states": 50_000, "invariants.timeout_s": 60}

SPIN_VARS = {"locked": "held", "pc": "phase"}
SPIN_ACTIONS = {"Request": "Want", "Acquire": "Take", "Spin": "Wait", "Release": "Drop"}
SPIN_CONSTANTS = {"N": "Workers", "Procs": "WorkerIds"}
DQ_VARS = {"network": "mailbox", "processor": "sink", "stream": "source", "requester": "asker", "pc": "loc"}
DQ_ACTIONS = {"c": "ConsumerLoop", "c1": "ConsumerAsk", "c2": "ConsumerTake", "p": "ProducerLoop",
              "p1": "ProducerHear", "p2": "ProducerSend", "Consumer": "ConsumerProc", "Producer": "ProducerProc"}
DQ_CONSTANTS = {"BUFFER_SIZE": "Capacity", "NUM_CONSUMERS": "Consumers", "PRODUCER": "ProducerId",
                "NUM_NODES": "Nodes"}


def _spin_merge(text: str) -> str:
    return merge_actions(text, ["Acquire", "Spin"], "TestAndSet", "p", "Next")


def _spin_split(text: str) -> str:
    return split_action(text, "Release", "p", "p = 1", ("ReleaseFirst", "ReleaseOther"), "Next")


def _dq_merge(text: str) -> str:
    return merge_actions(text, ["c", "c1"], "cRequest", "self", "Consumer")


def _dq_split(text: str) -> str:
    return split_action(text, "p1", "self", "Len(network[self]) = 1", ("p1Last", "p1More"), "Producer")


def spin_variants(gold) -> list[Variant]:
    merged = {"Acquire": "TestAndSet", "Spin": "TestAndSet"}
    split = {"Release": None}
    return [
        variant(gold, "vars", SPIN_VARS),
        variant(gold, "actions", SPIN_ACTIONS),
        variant(gold, "constants", SPIN_CONSTANTS),
        variant(gold, "vars+actions", {**SPIN_VARS, **SPIN_ACTIONS}),
        variant(gold, "all names", {**SPIN_VARS, **SPIN_ACTIONS, **SPIN_CONSTANTS}),
        variant(gold, "merged", transform=_spin_merge, event_actions=merged),
        variant(gold, "split", transform=_spin_split, event_actions=split),
        variant(gold, "merged+names", {**SPIN_VARS, "TestAndSet": "Attempt", **SPIN_CONSTANTS}, _spin_merge,
                {"Acquire": "Attempt", "Spin": "Attempt"}),
        variant(gold, "split+names", {**SPIN_VARS, **SPIN_CONSTANTS, "Request": "Want"}, _spin_split, split),
        variant(gold, "merged+split", transform=lambda t: _spin_split(_spin_merge(t)), event_actions={**merged, **split}),
    ]


def dqueue_variants(gold) -> list[Variant]:
    merged = {"c": "cRequest", "c1": "cRequest"}
    split = {"p1": None}
    return [
        variant(gold, "vars", DQ_VARS),
        variant(gold, "actions", DQ_ACTIONS),
        variant(gold, "constants", DQ_CONSTANTS),
        variant(gold, "vars+actions", {**DQ_VARS, **DQ_ACTIONS}),
        variant(gold, "all names", {**DQ_VARS, **DQ_ACTIONS, **DQ_CONSTANTS}),
        variant(gold, "merged", transform=_dq_merge, event_actions=merged),
        variant(gold, "split", transform=_dq_split, event_actions=split),
        variant(gold, "merged+names", {**DQ_VARS, **DQ_CONSTANTS, "cRequest": "ConsumerRequest"}, _dq_merge,
                {"c": "ConsumerRequest", "c1": "ConsumerRequest"}),
        variant(gold, "split+names", {**DQ_VARS, **DQ_CONSTANTS}, _dq_split, split),
        variant(gold, "merged+split", transform=lambda t: _dq_split(_dq_merge(t)), event_actions={**merged, **split}),
    ]


def _score(task: Task, chosen: Variant, gold_mapping: tv.TraceMapping) -> dict[str, tuple[float, str]]:
    ctx = ScoringContext(options=OPTIONS, helper=ScriptedHelper(task, gold_mapping, chosen))
    return {stage: (r.value, r.outcome) for stage in STAGES
            for r in [getattr(tla, f"{stage}_stage")(chosen.artifact, task, ctx)]}


def _gold_mapping(task: Task) -> tv.TraceMapping:
    traces = tla_conformance.task_traces(task)
    loaded = tla_conformance.load_traces(traces, _validate(task))
    return tv.resolve_mapping(task.references.model, loaded)


def _validate(task: Task) -> str | None:
    path = task.references.extra.get("pgo_validate_cfg")
    return Path(path).read_text() if path else None


@pytest.fixture(scope="module")
def spinlock() -> Task:
    return load_task_folder(STARTER_DIR / "tla" / "spinlock")


@pytest.fixture(scope="module")
def dqueue(shared_benchmarks: Path) -> Task:
    return next(t for t in sysmobench.load(shared_benchmarks / "sysmobench") if t.id == "sysmobench/dqueue")


def test_renames_leave_strings_and_comments_alone(spinlock: Task) -> None:
    renamed = variant(spinlock.references.model, "x", {"pc": "phase", "idle": "IDLE"}).artifact.main_text
    assert 'phase = [p \\in Procs |-> "idle"]' in renamed and "(* N workers" in renamed
    assert "CONSTANT N = 3" in variant(spinlock.references.model, "x", {"N": "Workers"}).artifact.files[
        "Spinlock.cfg"].replace("Workers", "N")


@pytest.mark.slow
def test_ten_spinlock_variants_keep_full_marks(spinlock: Task) -> None:
    variants = spin_variants(spinlock.references.model)
    assert len(variants) >= 10
    mapping = _gold_mapping(spinlock)
    with ThreadPoolExecutor(max_workers=2) as pool:  # TLC runs in subprocesses: two variants at a time
        scores = dict(zip([v.name for v in variants], pool.map(lambda v: _score(spinlock, v, mapping), variants)))
    assert scores == {v.name: {s: (1.0, "ok") for s in STAGES} for v in variants}


@pytest.mark.slow
def test_ten_dqueue_variants_keep_full_marks_on_the_real_traces(dqueue: Task) -> None:
    variants = dqueue_variants(dqueue.references.model)
    assert len(variants) >= 10
    mapping = _gold_mapping(dqueue)
    with ThreadPoolExecutor(max_workers=2) as pool:
        scores = dict(zip([v.name for v in variants], pool.map(lambda v: _score(dqueue, v, mapping), variants)))
    assert scores == {v.name: {s: (1.0, "ok") for s in STAGES} for v in variants}
