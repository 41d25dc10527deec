"""Harness overhead per attempt in the offline control experiment: wall time minus LLM latency and tool time.

Run: python speed/harness_overhead.py [--samples 1] [--kinds uml_class,sysml,architecture,tla]
                                                 [--checkpoints steps,none] [--repeat 1]

For each checkpoint mode (``steps``: LangGraph's checkpoint of every step, the default of ``sysmo run``;
``none``: attempt records only) it runs the control on the starter suite with warm tool servers, one attempt
at a time, and prints per task kind the median and p95 of the overhead per attempt (graph execution,
extraction, checkpointing) and its share of the attempt's wall time; then the share over all attempts
(total overhead / total attempt time), and the share of the whole run's wall time (start-up, scheduling,
checkpoint files, artifacts and store writes included; the runner stores an attempt while the next one
runs). Target: under 5% of the attempt's wall time with the warm tool servers.
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


def warm_up(kinds: list[str]) -> None:
    """Warm tool servers, imports, compiled agent graphs and control scripts: one attempt per agent and kind."""
    from sysmo.tools.plantuml import check as plantuml_check
    from sysmo.tools.sysml import validate as sysml_validate

    plantuml_check("@startuml\nclass A\n@enduml")
    sysml_validate("package P { part def A; }")
    with tempfile.TemporaryDirectory() as tmp:
        text_kinds = [k for k in kinds if k != "tla"] or ["uml_class"]  # TLA+ attempts are slow and add nothing here
        config = ExperimentConfig(id="warm-up", output_dir=Path(tmp), samples=1, score=False, concurrency=1,
                                  tasks=TaskSelection(benchmarks=["starter"], kinds=text_kinds, sample=2, seed=1))
        run_experiment(config, progress=False)


TARGET_PERCENT = 5.0  # of the attempts' wall time, with warm tool servers


def measure(kinds: list[str], samples: int, checkpoints: str) -> tuple[float, float]:
    """One run of the control; prints its figures and returns the harness's share (%) of the attempts' time
    (all attempts together) and of the whole run."""
    with tempfile.TemporaryDirectory() as tmp:
        config = ExperimentConfig(id="overhead", output_dir=Path(tmp), samples=samples, score=False, concurrency=1,
                                  checkpoints=checkpoints,  # type: ignore[arg-type]
                                  tasks=TaskSelection(benchmarks=["starter"], kinds=kinds))
        summary = run_experiment(config, progress=False)
        store = Store(Path(tmp) / "overhead" / "results.sqlite")
        rows = store.query("SELECT kind, duration_s, llm_time_s, tool_time_s FROM attempts")
        store.close()
    by_kind: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        overhead = max(0.0, r["duration_s"] - r["llm_time_s"] - r["tool_time_s"])
        by_kind.setdefault(r["kind"], []).append((overhead, overhead / r["duration_s"] if r["duration_s"] else 0.0))
    print(f"\ncheckpoints={checkpoints}")
    print(f"{'kind':<14}{'attempts':>9}{'overhead median ms':>20}{'p95 ms':>10}{'share median':>14}{'share p95':>11}")
    for kind, values in sorted(by_kind.items()):
        ms = [v[0] * 1000 for v in values]
        share = [v[1] * 100 for v in values]
        print(f"{kind:<14}{len(values):>9}{statistics.median(ms):>20.1f}{percentile(ms, 0.95):>10.1f}"
              f"{statistics.median(share):>13.1f}%{percentile(share, 0.95):>10.1f}%")
    total_wall = sum(r["duration_s"] for r in rows)
    total_overhead = sum(v[0] for values in by_kind.values() for v in values)
    print(f"inside attempts: {len(rows)} attempts, overhead {total_overhead:.2f} s of {total_wall:.2f} s attempt time "
          f"= {100 * total_overhead / total_wall:.1f}%")
    # the whole run: start-up, task loading, scheduling, checkpoint files, artifacts and store writes included
    # (the runner stores an attempt while the next one runs, so this is what the researcher waits for)
    waited = sum(r["llm_time_s"] + r["tool_time_s"] for r in rows)
    run_overhead = max(0.0, summary.seconds - waited)
    print(f"whole run: {summary.seconds:.2f} s, of which LLM + tools {waited:.2f} s; harness "
          f"{run_overhead:.2f} s = {100 * run_overhead / summary.seconds:.1f}% "
          f"({1000 * run_overhead / max(1, len(rows)):.1f} ms per attempt)")
    return 100 * total_overhead / total_wall, 100 * run_overhead / summary.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--kinds", default="uml_class,sysml,architecture,tla")
    parser.add_argument("--checkpoints", default="steps,none", help="checkpoint modes to measure, comma-separated")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per mode, interleaved (the machine's speed drifts); prints the median share")
    args = parser.parse_args()
    warm_up(args.kinds.split(","))
    modes = [m.strip() for m in args.checkpoints.split(",")]
    shares: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    for _ in range(args.repeat):
        for mode in modes:
            shares[mode].append(measure(args.kinds.split(","), args.samples, mode))
    print()
    for mode, values in shares.items():
        inside = statistics.median(v[0] for v in values)
        whole = statistics.median(v[1] for v in values)
        verdict = "met" if max(inside, whole) < TARGET_PERCENT else "NOT met"
        print(f"checkpoints={mode}, median of {len(values)} run(s): harness {inside:.1f}% of the attempts' time "
              f"(range {min(v[0] for v in values):.1f}-{max(v[0] for v in values):.1f}%), {whole:.1f}% of the "
              f"whole run (range {min(v[1] for v in values):.1f}-{max(v[1] for v in values):.1f}%); "
              f"target under {TARGET_PERCENT:.0f}%: {verdict}")


if __name__ == "__main__":
    main()
