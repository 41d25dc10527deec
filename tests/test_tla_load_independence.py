"""The invariants stage in the ``sysmo`` scoring mode does not depend on the machine's load: the PGo locksvc spec
with ``unlock`` made a no-op (it never releases the lock nor tells the server) gets the same stage value, verdicts
and explored states idle and with every core busy, and it loses the liveness template the no-op breaks.

Real TLC, no run cache (a replayed run would prove nothing); two clients instead of the task's five keep the state
space at 54 states, so each scoring takes seconds (docs/tla-verdicts.md has the measurements)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sysmo.benchmarks.registry import get_task
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.scorecard import StageResult
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.cascades import tla
from sysmo.evals.metrics import tla_invariants

RELEASING_UNLOCK = '''unlock(self) == /\\ pc[self] = "unlock"
                /\\ hasLock' = [hasLock EXCEPT ![self] = FALSE]
                /\\ LET value20 == [from |-> self, type |-> UnlockMsg] IN
                     /\\ network' = [network EXCEPT ![ServerID] = ((network)[ServerID]) (+) (SetToBag({value20}))]
                     /\\ pc' = [pc EXCEPT ![self] = "Done"]
                /\\ UNCHANGED << msg, q >>'''
NO_OP_UNLOCK = '''unlock(self) == /\\ pc[self] = "unlock"
                /\\ pc' = [pc EXCEPT ![self] = "Done"]
                /\\ UNCHANGED << network, hasLock, msg, q >>'''
BUSY_LOOP = "while True: pass"


def unlock_no_op(data: Path) -> Artifact:
    """locksvc's gold spec with a no-op ``unlock``, for two clients."""
    folder = data / "sysmobench" / "pgo" / "locksvc"
    spec = (folder / "locksvc.tla").read_text(encoding="utf-8")
    cfg = (folder / "locksvc.cfg").read_text(encoding="utf-8")
    assert RELEASING_UNLOCK in spec and "NumClients = 5" in cfg
    return Artifact(language=Language.TLA, files={
        "locksvc.tla": spec.replace(RELEASING_UNLOCK, NO_OP_UNLOCK),
        "locksvc.cfg": cfg.replace("NumClients = 5", "NumClients = 2")})


@contextmanager
def every_core_busy() -> Iterator[list[subprocess.Popen]]:
    """One busy-looping Python process per core for the duration of the block (stopped by their own ids)."""
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(os.cpu_count() or 2)]
    try:
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(timeout=10)


# a safety template, the template the system is documented to violate, and a liveness template the no-op breaks:
# three TLC runs per scoring instead of the task's seven (SystemLiveness and SpecNoDeadlock repeat ProgressOK's
# liveness check, ServerIsIdle is a two-state possibility)
TEMPLATES = ("LockSafety", "NoPriorityInversion", "ProgressOK")


def _score(artifact: Artifact, data: Path) -> StageResult:
    task = get_task("sysmobench/locksvc", data_dir=data)
    wanted = [t for t in task.references.invariants if t.name in TEMPLATES]
    assert [t.name for t in wanted] == list(TEMPLATES)
    task = task.model_copy(update={"references": task.references.model_copy(update={"invariants": wanted})})
    # no helper model: the templates' own examples, matched by the model's names (as `sysmo check --task` does)
    return tla.invariants_stage(artifact, task, ScoringContext(options={"mode": "sysmo"}))


def _decided(stage: StageResult) -> list[tuple[str, str, int | None]]:
    return [(v["name"], v["outcome"], v["distinct_states"]) for v in stage.detail["invariants"]]


@pytest.mark.slow
def test_the_invariants_stage_gives_the_same_value_idle_and_under_load(shared_benchmarks: Path) -> None:
    artifact = unlock_no_op(shared_benchmarks)
    idle = _score(artifact, shared_benchmarks)
    with every_core_busy() as hogs:
        loaded = _score(artifact, shared_benchmarks)
        assert all(hog.poll() is None for hog in hogs)  # the load lasted the whole scoring
    assert (loaded.value, loaded.outcome) == (idle.value, idle.outcome)
    assert _decided(loaded) == _decided(idle)
    # the no-op loses points: the second client's request is never granted
    outcomes = {name: outcome for name, outcome, _ in _decided(idle)}
    assert outcomes == {"LockSafety": "ok", "NoPriorityInversion": "ok",  # its documented violation is found
                        "ProgressOK": "failed"}
    assert idle.value == pytest.approx(2 / 3)
    assert idle.provenance["bounded"] == "sysmo" and idle.detail["max_states"] == tla_invariants.SYSMO_MAX_STATES
    assert not idle.detail["timed_out_counted_holding"]
