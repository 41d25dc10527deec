"""Measures what the sandbox costs per command: `true` and `java -version`, run directly and through each backend.

    /work/venv/bin/python speed/sandbox_overhead.py -n 30 --modes bwrap unshare --json out.json

Prints the median and p95 wall time per (command, runner) and the overhead of the median over the direct
run. Nothing is asserted: the numbers are for reading (and for comparing machines and versions).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sysmo.sandbox.base import Limits
from sysmo.sandbox.local import LocalSandbox

COMMANDS = {
    "true": ["true"],
    "java -version": ["java", "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-version"],
}
LIMITS = Limits(timeout_s=60, cpu_s=60, memory_mb=1024, pids=256)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def time_runs(run: Callable[[], int | None], n: int, warmup: int = 2) -> list[float]:
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        code = run()
        samples.append(time.perf_counter() - start)
        if code != 0:
            raise SystemExit(f"a benchmark command failed with exit code {code}")
    return samples


def runners(modes: list[str], cgroups: bool) -> dict[str, Callable[[list[str]], int | None]]:
    found: dict[str, Callable[[list[str]], int | None]] = {
        "direct": lambda argv: subprocess.run(argv, capture_output=True).returncode,
    }
    for mode in modes:
        if mode == "docker":
            from sysmo.sandbox.docker_backend import DockerSandbox

            if not DockerSandbox.engine_available():
                print("docker: no engine answers; skipped", file=sys.stderr)
                continue
            box = DockerSandbox()
        else:
            box = LocalSandbox(mode=mode, use_cgroups=cgroups)
        found[f"sandbox:{mode}" + ("" if cgroups or mode == "docker" else " (no cgroups)")] = (
            lambda argv, box=box: box.run(argv, limits=LIMITS).returncode
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="timed runs per cell (after 2 warm-up runs)")
    parser.add_argument("--modes", nargs="+", default=None,
                        help="sandbox modes to measure: bwrap, unshare, docker (default: the detected local one)")
    parser.add_argument("--no-cgroups", action="store_true", help="also measure the local modes without cgroups")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    args = parser.parse_args(argv)
    modes = args.modes or [LocalSandbox.detect_mode()]
    table = runners(modes, cgroups=True)
    if args.no_cgroups:
        table.update(runners([m for m in modes if m != "docker"], cgroups=False))
    rows = []
    print(f"n={args.n} per cell, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    print(f"{'command':<15} {'runner':<28} {'median ms':>10} {'p95 ms':>10} {'overhead ms':>12}")
    for label, command in COMMANDS.items():
        direct_median = None
        for runner_name, run in table.items():
            samples = time_runs(lambda run=run: run(command), args.n)
            median, p95 = statistics.median(samples) * 1000, percentile(samples, 0.95) * 1000
            if runner_name == "direct":
                direct_median = median
            overhead = median - direct_median if direct_median is not None else float("nan")
            rows.append({"command": label, "runner": runner_name, "median_ms": round(median, 2),
                         "p95_ms": round(p95, 2), "overhead_ms": round(overhead, 2), "n": args.n})
            print(f"{label:<15} {runner_name:<28} {median:>10.1f} {p95:>10.1f} {overhead:>12.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
