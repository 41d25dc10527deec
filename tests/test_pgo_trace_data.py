"""PGo trace replay constrains the logged data, not only the program counter (real SysMoBench locksvc traces)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import Outcome
from sysmo.tools.tla import trace_validation as tv
from sysmo.tools.tla.pgo_trace import local_writes, read_pgo_run, validation_cfg

RUNS = 4
GOLD_RECEIVE = "/\\ msg' = [msg EXCEPT ![self] = yielded_network1]"
# the same message with one more field: every guard reads .type/.from only, so the control flow is unchanged
WRONG_RECEIVE = "/\\ msg' = [msg EXCEPT ![self] = yielded_network1 @@ [seen |-> TRUE]]"


@pytest.fixture(scope="module")
def locksvc(shared_benchmarks: Path) -> tuple[str, list[tv.Trace], str]:
    folder = shared_benchmarks / "sysmobench" / "pgo" / "locksvc"
    runs = sorted(p for p in (folder / "traces_found").iterdir() if p.is_dir())[:RUNS]
    cfg = validation_cfg((folder / "locksvc.cfg").read_text(), (folder / "locksvcValidate.cfg").read_text())
    return (folder / "locksvc.tla").read_text(), [read_pgo_run(run) for run in runs], cfg


def _spec(text: str) -> Artifact:
    return Artifact(language=Language.TLA, files={"locksvc.tla": text})


def _pc_only(traces: list[tv.Trace]) -> list[tv.Trace]:
    return [t.model_copy(update={"lines": [line.model_copy(update={"state": {"pc": line.state["pc"]}})
                                           for line in t.lines]}) for t in traces]


def test_locals_are_read_as_state() -> None:
    record = {"csElements": [
        {"indices": [], "name": {"name": "msg", "prefix": "AServer", "self": "1"}, "tag": "write",
         "oldValue": "defaultInitValue", "value": '[from |-> 2, type |-> "lock_msg"]'},
        {"indices": ["2"], "name": {"name": "network", "prefix": "AServer", "self": "1"}, "tag": "write",
         "value": '"grant_msg"'},
        {"indices": [], "name": {"name": ".pc", "prefix": "", "self": "1"}, "tag": "write",
         "oldValue": '"AServer.serverReceive"', "value": '"AServer.serverRespond"'}]}
    assert local_writes(record) == {"msg": '[from |-> 2, type |-> "lock_msg"]'}


@pytest.mark.slow
def test_gold_conforms_and_a_wrong_data_value_does_not(locksvc: tuple[str, list[tv.Trace], str]) -> None:
    text, traces, cfg = locksvc
    assert GOLD_RECEIVE in text
    assert any("msg" in line.state for t in traces for line in t.lines)
    gold = tv.validate_traces(_spec(text), traces, cfg=cfg)
    assert gold.outcome == Outcome.OK and gold.score == 1.0
    assert {"pc", "msg", "q"} <= {v.variable for v in gold.mapping.variables}

    mutant = _spec(text.replace(GOLD_RECEIVE, WRONG_RECEIVE))
    # control flow alone cannot tell them apart ...
    assert tv.validate_traces(mutant, _pc_only(traces), cfg=cfg).score == 1.0
    # ... the logged value of msg can
    wrong = tv.validate_traces(mutant, traces, cfg=cfg)
    assert wrong.score == 0.0
    assert all(v.outcome == Outcome.FAILED and v.failing_event == "serverReceive" for v in wrong.traces)
