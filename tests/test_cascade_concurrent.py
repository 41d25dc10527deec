"""Stages that gate nothing run at the same time in a ``concurrent`` cascade (the TLA+ one): results keep the
stage order, a gate still skips what follows it, ``cascade.concurrent=false`` runs them one after another;
SANY/TLC JVMs share a process-wide number of slots (one per core)."""

from __future__ import annotations

import threading
import time

import pytest
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.scorecard import StageResult
from sysmo.contracts.task import Task, TaskKind
from sysmo.evals.cascade import Cascade, FunctionStage, ScoringContext, cascade_for
from sysmo.tools.tla import jvm

ARTIFACT = Artifact(language=Language.TLA, files={"M.tla": "---- MODULE M ----\n====\n"})
TASK = Task(id="t/1", benchmark="t", kind=TaskKind.TLA)


def _recorder(log: list[tuple[str, str]], lock: threading.Lock, passed: bool = True, pause: float = 0.2):
    def stage(name: str):
        def run(artifact, task, ctx) -> StageResult:
            with lock:
                log.append(("start", name))
            time.sleep(pause)
            with lock:
                log.append(("end", name))
            return StageResult(stage=name, value=1.0 if passed else 0.0, passed=passed, outcome="ok")
        return run
    return stage


def _cascade(stage, gate_passes: bool = True) -> Cascade:
    def gate(artifact, task, ctx) -> StageResult:
        return StageResult(stage="gate", value=1.0, passed=gate_passes, outcome="ok" if gate_passes else "failed")

    return Cascade(name="c", concurrent=True, stages=[
        FunctionStage("gate", gate),
        *(FunctionStage(n, stage(n), gate=False) for n in ("a", "b", "c")),
        FunctionStage("last", stage("last")),
    ])


def test_non_gating_stages_overlap_and_keep_their_order() -> None:
    log: list[tuple[str, str]] = []
    card = _cascade(_recorder(log, threading.Lock())).score(ARTIFACT, TASK)
    assert [s.stage for s in card.stages] == ["gate", "a", "b", "c", "last"]
    starts = [i for i, (kind, name) in enumerate(log) if kind == "start" and name in "abc"]
    first_end = min(i for i, (kind, name) in enumerate(log) if kind == "end" and name in "abc")
    assert len(starts) == 3 and max(starts) < first_end  # all three started before any ended
    assert log[-2:] == [("start", "last"), ("end", "last")]  # the stage after them waits for them
    assert all(s.duration_s >= 0.15 for s in card.stages[1:])


def test_off_by_option_and_a_failed_gate_still_skips() -> None:
    log: list[tuple[str, str]] = []
    _cascade(_recorder(log, threading.Lock(), pause=0.01)).score(
        ARTIFACT, TASK, ScoringContext(options={"cascade.concurrent": "false"}))
    assert log == [(k, n) for n in ("a", "b", "c", "last") for k in ("start", "end")]
    card = _cascade(_recorder([], threading.Lock()), gate_passes=False).score(ARTIFACT, TASK)
    assert [s.outcome for s in card.stages] == ["failed", "skipped", "skipped", "skipped", "skipped"]


def test_the_tla_cascade_is_concurrent() -> None:
    assert cascade_for(TaskKind.TLA).concurrent


def test_jvm_slots_follow_the_cores_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jvm.JVMS_ENV, "3")
    assert jvm.max_jvms() == 3 and jvm.jvm_slot() is jvm.jvm_slot()
    monkeypatch.setenv(jvm.JVMS_ENV, "0")
    assert jvm.max_jvms() >= 1
