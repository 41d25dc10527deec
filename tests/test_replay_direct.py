"""A replay walks the plain repair loop without LangGraph: the attempt record is the graph run's, field by field."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

# gpt_4.1: replies that parse and fail OpenSysML; CodeLlama: a whitespace-only reply (no artifact, no check);
# cil/openai: a transcript of several rounds, so the loop goes on to repairs
MODELS = ["replay/designbench:gpt_4.1/direct", "replay/designbench:CodeLlama-13b-Instruct-hf/direct"]
IDS = ["sysmbench/1"]
TIMINGS = {"started_at", "finished_at", "at", "ts", "duration_s", "latency_s", "tool_time_s", "llm_time_s", "kernel_s",
           "round_started"}


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))


def _attempts(shared_benchmarks: Path, tmp_path: Path, models: list[str], ids: list[str], max_rounds: int,
              *, via_graph: bool) -> list[dict[str, Any]]:
    from sysmo.agents.run import arun_attempt_steps, compiled_graph, drive_within
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.graphs.loop import initial_state
    from sysmo.runner.config import ExperimentConfig
    from sysmo.runner.unit_runner import UnitRunner
    from sysmo.runner.units import WorkUnit, load_selected_tasks

    config = ExperimentConfig(id="direct-vs-graph", output_dir=tmp_path, data_dir=shared_benchmarks,
                              agents=["base_modeling"], models=models, samples=1, max_rounds=max_rounds,
                              score=False, checkpoints="none", tasks=TaskSelection(benchmarks=["sysmbench"], ids=ids))
    runner = UnitRunner(config, tmp_path / ("graph" if via_graph else "direct"))

    async def graph_run(spec, ctx, run_config):
        return await drive_within(compiled_graph(spec, ctx), initial_state(ctx), run_config, ctx)

    records = []
    try:
        for task in load_selected_tasks(config):
            for model in models:
                arm = config.arms()[0]
                unit = WorkUnit(task, "base_modeling", model, 0, config.id, arm, arm.key(arm), 7)
                attempt = asyncio.run(arun_attempt_steps("base_modeling", runner.agent_context(unit), model_name=model,
                                                         run_graph=graph_run if via_graph else None))
                record = attempt.model_dump(mode="json")
                record["events"] = [e.model_dump(mode="json") for e in attempt.events]  # not in the dump
                records.append(_without_timings(record))
    finally:
        runner.close()
    return records


def test_replayed_attempts_walked_directly_equal_the_graph_runs(shared_benchmarks: Path, tmp_path: Path) -> None:
    direct = _attempts(shared_benchmarks, tmp_path, MODELS, IDS, 0, via_graph=False)
    graph = _attempts(shared_benchmarks, tmp_path, MODELS, IDS, 0, via_graph=True)
    assert len(direct) == 2
    assert direct == graph, _diff(direct, graph)[:10]
    assert any(r["rounds"][0]["check"] for r in direct) and any(not r["rounds"][0]["check"] for r in direct)
    assert all(any(e["type"] == "graph_step" for e in r["events"]) for r in direct)


@pytest.mark.slow
def test_a_replayed_transcript_of_several_rounds_walks_its_repairs_as_the_graph_does(shared_benchmarks: Path,
                                                                                     tmp_path: Path) -> None:
    models = ["replay/cil:openai"]
    direct = _attempts(shared_benchmarks, tmp_path, models, ["sysmbench/2"], 3, via_graph=False)
    graph = _attempts(shared_benchmarks, tmp_path, models, ["sysmbench/2"], 3, via_graph=True)
    assert direct == graph, _diff(direct, graph)[:10]
    assert len(direct[0]["rounds"]) > 1


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _diff(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:150]} != {str(b)[:150]}"]
