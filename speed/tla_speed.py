"""SANY and TLC speed: median and p95 of a SANY check per module (cold: one sandboxed JVM per check) and of TLC runs.

Run: ``python speed/tla_speed.py [--runs N] [--data DIR]``.
Target on a 2-core machine: SANY <= 1 s per module. There is no warm path for SANY/TLC (each check is
one JVM in a fresh sandbox work dir, because SANY extracts its standard modules to a temp dir). The TLC rows
include a model check started from ``tlc2.TLC`` instead of the launcher (``jvm_startup.launcher``), whose JVM
waits up to 300 ms at exit for RMI's accept thread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from unittest import mock

from sysmo.contracts.check import CheckResult
from sysmo.tools.tla import jvm_startup, sany, tlc
from sysmo.tools.tla.jvm import library_dir

SMALL_SPEC = """---- MODULE Small ----
EXTENDS Naturals, SequencesExt
VARIABLES x, q
Init == x = 0 /\\ q = <<>>
Put == Len(q) < 3 /\\ q' = Append(q, x) /\\ x' = (x + 1) % 4
Take == q # <<>> /\\ q' = Tail(q) /\\ x' = x
Next == Put \\/ Take
TypeOK == x \\in 0..3 /\\ Len(q) <= 3
====
"""
SMALL_CFG = "INIT Init\nNEXT Next\nINVARIANT TypeOK\n"
DEFAULT_DATA = Path(os.environ.get("SYSMO_TEST_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "benchmarks"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def modules(data: Path) -> dict[str, str]:
    """Module name -> text: our library, a small spec, and the SysMoBench specs when the data is there."""
    found = {f"library/{p.name}": p.read_text() for p in sorted(library_dir().glob("*.tla"))}
    found["inline/Small.tla"] = SMALL_SPEC
    root = data / "sysmobench"
    if root.is_dir():
        for folder in ("example_specs", "bug_repro_specs", "pgo"):
            for path in sorted((root / folder).rglob("*.tla")):
                if "traces_found" in path.parts or "badspecs" in path.parts or path.name == "TestSpec.tla":
                    continue
                found[str(path.relative_to(root))] = path.read_text()
    return found


def time_runs(fn, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def without_launcher() -> CheckResult:
    with mock.patch.object(jvm_startup, "launcher", lambda configured=None: None):
        return tlc.model_check(SMALL_SPEC, SMALL_CFG, check_deadlock=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="checks per module / TLC runs per mode")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared benchmarks directory")
    args = parser.parse_args()

    print(f"SANY, cold (one sandboxed JVM per check), {args.runs} runs per module")
    print(f"{'module':58} {'bytes':>8} {'median s':>9} {'p95 s':>7}  outcome")
    all_times: list[float] = []
    for name, text in modules(args.data).items():
        outcome = sany.check(text).outcome.value  # one unmeasured run, so disk caches are warm
        times = time_runs(lambda text=text: sany.check(text), args.runs)
        all_times += times
        print(f"{name:58} {len(text):8d} {statistics.median(times):9.3f} {percentile(times, 0.95):7.3f}  {outcome}")
    print(f"{'SANY, all modules':58} {'':8} {statistics.median(all_times):9.3f} {percentile(all_times, 0.95):7.3f}"
          f"  (target <= 1 s per module)")

    print(f"\nTLC on {len(SMALL_SPEC)} bytes of spec, {args.runs} runs each")
    for label, fn in (
        ("simulate num=50 depth=50 with coverage",
         lambda: tlc.simulate(SMALL_SPEC, SMALL_CFG, num=50, depth=50, seed=1, check_deadlock=False)),
        ("model_check (complete BFS)", lambda: tlc.model_check(SMALL_SPEC, SMALL_CFG, check_deadlock=False)),
        ("model_check, started from tlc2.TLC (no launcher)", without_launcher),
    ):
        outcome = fn().outcome.value
        times = time_runs(fn, args.runs)
        print(f"{label:58} {'':8} {statistics.median(times):9.3f} {percentile(times, 0.95):7.3f}  {outcome}")


if __name__ == "__main__":
    main()
