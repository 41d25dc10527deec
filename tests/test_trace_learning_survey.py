"""trace_learning's survey names PGo (TraceLink) events by archetype and label, on the real SysMoBench logs."""

from __future__ import annotations

from pathlib import Path

from sysmo.agents.trace_learning import survey_text, survey_traces
from sysmo.benchmarks import sysmobench


def test_pgo_survey_names_every_event(shared_benchmarks: Path) -> None:
    tasks = {t.id: t for t in sysmobench.load(shared_benchmarks / "sysmobench")}
    found = survey_traces(tasks["sysmobench/locksvc"])
    kinds = {k["kind"]: k for k in found["kinds"]}
    assert "(unnamed)" not in kinds
    assert found["events"] == sum(k["count"] for k in found["kinds"]) > 1000 - 10
    assert {"AServer.serverLoop", "AServer.serverReceive", "AClient.acquireLock", "AClient.unlock"} <= set(kinds)
    assert "AClient.acquireLock (aborted)" in kinds
    assert "AServer.network" in kinds["AServer.serverReceive"]["fields"]
    assert "- `AClient.criticalSection` x" in survey_text(found)


def test_ndjson_survey_still_uses_the_event_key(tmp_path: Path) -> None:
    from sysmo.contracts.task import Task, TaskInputs, TaskKind, TraceSet

    trace = tmp_path / "t.ndjson"
    trace.write_text('{"event": "Acquire", "actor": 1}\n{"event": "Release", "actor": 1}\n{"x": 1}\n')
    task = Task(id="t/1", benchmark="t", kind=TaskKind.TLA, inputs=TaskInputs(traces=TraceSet(files=[trace])))
    kinds = {k["kind"]: k["fields"] for k in survey_traces(task)["kinds"]}
    assert kinds == {"Acquire": ["actor"], "Release": ["actor"], "(unnamed)": ["x"]}
