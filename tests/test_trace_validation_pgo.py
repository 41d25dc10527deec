"""PGo traces: per-process logs merged by vector clock, replayed against the PGo ground-truth specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sysmo.contracts.artifact import Artifact, Language
from sysmo.errors import TaskError
from sysmo.contracts.check import Outcome
from sysmo.tools.tla import trace_validation as tv
from sysmo.tools.tla.pgo_trace import read_pgo_run, validation_cfg


def _record(archetype: str, me: int, clock: dict[tuple[str, int], int], start: str, end: str | None,
            abort: bool = False) -> str:
    elements = [{"indices": [], "name": {"name": ".pc", "prefix": "", "self": str(me)}, "tag": "read",
                 "value": json.dumps(f"{archetype}.{start}")}]
    if end is not None:
        elements.append({"indices": [], "name": {"name": ".pc", "prefix": "", "self": str(me)}, "tag": "write",
                         "value": json.dumps(f"{archetype}.{end}")})
    return json.dumps({"archetypeName": archetype, "self": str(me), "isAbort": abort, "csElements": elements,
                       "clock": [[[a, str(s)], n] for (a, s), n in clock.items()]})


def test_logs_merge_in_happens_before_order_and_aborted_or_blocked_sections_are_not_steps(tmp_path: Path) -> None:
    # the consumer's second step happens after the producer's second step (it read what that step wrote)
    (tmp_path / "trace-0-1.log").write_text("\n".join([
        _record("AProducer", 0, {("AProducer", 0): 1}, "p", "p1"),
        _record("AProducer", 0, {("AProducer", 0): 2}, "p1", "p2"),
    ]) + "\n")
    (tmp_path / "trace-1-2.log").write_text("\n".join([
        _record("AConsumer", 1, {("AConsumer", 1): 1}, "c", None, abort=True),
        _record("AConsumer", 1, {("AConsumer", 1): 2}, "c", "c1"),
        _record("AConsumer", 1, {("AConsumer", 1): 3, ("AProducer", 0): 2}, "c1", "c"),
    ]) + "\n")
    trace = read_pgo_run(tmp_path)
    assert trace.lines[0].event == "Init" and trace.lines[0].state == {"pc": {"0": "p", "1": "c"}}
    steps = [(line.event, line.actor) for line in trace.lines[1:]]
    assert steps == [("p", 0), ("p1", 0), ("c", 1), ("c1", 1)]
    assert trace.lines[-1].state == {"pc": {"0": "p2", "1": "c"}}


def test_clocks_that_wait_on_each_other_are_rejected(tmp_path: Path) -> None:
    (tmp_path / "trace-0-1.log").write_text(_record("A", 0, {("A", 0): 1, ("B", 1): 1}, "x", "y") + "\n")
    (tmp_path / "trace-1-1.log").write_text(_record("B", 1, {("B", 1): 1, ("A", 0): 1}, "x", "y") + "\n")
    with pytest.raises(TaskError, match="vector clocks admit no order"):
        read_pgo_run(tmp_path)


def test_validate_cfg_values_override_the_spec_cfg() -> None:
    text = validation_cfg("CONSTANT defaultInitValue = defaultInitValue\nCONSTANT NumClients = 5\n"
                          "SPECIFICATION Spec\n", "CONSTANTS\n  NumClients = 5\n")
    assert "defaultInitValue = defaultInitValue" in text and text.count("NumClients") == 1
    assert "SPECIFICATION" not in text


def _pgo(shared: Path, task: str, spec: str | None = None) -> tuple[Artifact, list[tv.Trace], str]:
    folder = shared / "sysmobench" / "pgo" / task
    path = folder / (spec or f"{task}.tla")
    artifact = Artifact(language=Language.TLA, files={path.name: path.read_text()})
    runs = sorted(p for p in (folder / "traces_found").iterdir() if p.is_dir())
    cfg = validation_cfg((folder / f"{task}.cfg").read_text(), (folder / f"{task}Validate.cfg").read_text())
    return artifact, [read_pgo_run(run) for run in runs], cfg


# The ground-truth specs conform to every shipped trace (dqueue 4 runs, locksvc 22, raftkvs 2, the mapping by
# name with no notes): tests/test_pgo_gold_controls.py, whose conformance stage makes these very replays.


@pytest.mark.slow
def test_pgo_locksvc_fifo_badspec_is_rejected_on_most_traces(shared_benchmarks: Path) -> None:
    """The badspec models the server's inbox as a FIFO queue; the real server takes messages in any order. With
    the logged data checked, the replay fails where the server stores a message the FIFO would not give it."""
    artifact, traces, cfg = _pgo(shared_benchmarks, "locksvc", "badspecs/locksvc_tcp.tla")
    result = tv.validate_traces(artifact, traces, cfg=cfg)
    rejected = [v for v in result.traces if not v.accepted]
    assert len(rejected) >= len(traces) // 2
    assert all(v.outcome == Outcome.FAILED and v.failing_event == "serverReceive" for v in rejected)
