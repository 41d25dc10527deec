"""Harness overhead per attempt in the offline control experiment: wall time minus LLM latency and tool time.

Run: python benchmarks_speed/harness_overhead.py [--samples 2] [--kinds uml_class,sysml] [--no-score]
Prints median and p95 of the overhead (graph execution, extraction, checkpointing, store writes) per attempt,
and its share of the attempt's wall time. Target: under 5% with the warm tool servers.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from sysmo.benchmarks.selection import TaskSelection
from sysmo.runner import ExperimentConfig, run_experiment
from sysmo.store import Store


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--kinds", default="uml_class,sysml,architecture,tla")
    parser.add_argument("--concurrency", type=int, default=1, help="1 measures one attempt at a time (no contention)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = ExperimentConfig(id="overhead", output_dir=Path(tmp), samples=args.samples, score=False,
                                  concurrency=args.concurrency,
                                  tasks=TaskSelection(benchmarks=["starter"], kinds=args.kinds.split(",")))
        # warm the tool servers first so the figures are for the warm path
        from sysmo.tools.plantuml import check as plantuml_check
        from sysmo.tools.sysml import validate as sysml_validate

        plantuml_check("@startuml\nclass A\n@enduml")
        sysml_validate("package P { part def A; }")
        run_experiment(config, progress=False)
        store = Store(Path(tmp) / "overhead" / "results.sqlite")
        rows = store.query("SELECT kind, agent, duration_s, llm_time_s, tool_time_s FROM attempts")
        by_kind: dict[str, list[tuple[float, float]]] = {}
        for r in rows:
            overhead = max(0.0, r["duration_s"] - r["llm_time_s"] - r["tool_time_s"])
            by_kind.setdefault(r["kind"], []).append((overhead, overhead / r["duration_s"] if r["duration_s"] else 0.0))
        print(f"{'kind':<14}{'attempts':>9}{'overhead median ms':>20}{'p95 ms':>10}{'share median':>14}{'share p95':>11}")
        for kind, values in sorted(by_kind.items()):
            ms = [v[0] * 1000 for v in values]
            share = [v[1] * 100 for v in values]
            print(f"{kind:<14}{len(values):>9}{statistics.median(ms):>20.1f}{percentile(ms, 0.95):>10.1f}"
                  f"{statistics.median(share):>13.1f}%{percentile(share, 0.95):>10.1f}%")
        store.close()


if __name__ == "__main__":
    main()
