"""Full TLA+ cascade time per spec: each PGo gold spec and each SysMoBench example spec, seconds per stage.

Run: ``python speed/tla_cascade_speed.py [--data DIR] [--system locksvc ...] [--kind gold|example]
[--option KEY=VALUE ...] [--jvm-profile] [--cache DIR]``.
Target on a 2-core machine: at most 60 s per spec for the whole cascade (syntax, runtime, conformance,
invariants), with SysMoBench's settings (20 runtime simulations of 50 x 50 steps, every trace, every
invariant template). ``--jvm-profile`` also counts the JVMs started (SANY and TLC) and their summed seconds per
stage, to show where the time goes. Each row ends with the 1-minute load average: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

from sysmo.evals import reproduce_sysmobench as rs
from sysmo.tools.tla import jvm, run_cache

DEFAULT_DATA = Path(os.environ.get("SYSMO_TEST_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "benchmarks"))
TARGET_S = 60.0


STAGE_MODULES = (  # the first module found on the calling thread's stack names the stage a JVM ran for
    ("sysmo.evals.metrics.tla_invariants", "invariants"),
    ("sysmo.evals.metrics.tla_conformance", "conformance"),
    ("sysmo.tools.tla.trace_validation", "conformance"),
    ("sysmo.evals.metrics.tla_runtime", "runtime"),
    ("sysmo.evals.metrics.tla_syntax", "syntax"),
)


def _stage_of_caller() -> str:
    modules = set()
    frame = sys._getframe(2)
    while frame is not None:
        modules.add(frame.f_globals.get("__name__", ""))
        frame = frame.f_back
    return next((stage for module, stage in STAGE_MODULES if module in modules), "-")


class JvmCounter:
    """Wraps ``jvm.run_java`` to count JVM starts and their seconds per main class and per stage (the stages
    run at the same time, each in its own threads: a JVM is attributed from its caller's stack)."""

    def __init__(self) -> None:
        self.count: Counter[tuple[str, str]] = Counter()
        self.seconds: defaultdict[tuple[str, str], float] = defaultdict(float)
        self.lock = threading.Lock()
        self.original = jvm.run_java

    def __enter__(self) -> JvmCounter:
        def counted(main_class, args, **kwargs):
            key = (_stage_of_caller(), main_class.rsplit(".", 1)[-1])
            result = self.original(main_class, args, **kwargs)
            with self.lock:  # the sandbox's time: the JVM's own, not the wait for a JVM slot
                self.count[key] += 1
                self.seconds[key] += result.duration_s
            return result

        import sysmo.evals.metrics.tla_syntax as syntax_module
        import sysmo.tools.tla.sany as sany_module
        import sysmo.tools.tla.tlc as tlc_module
        import sysmo.tools.tla.trace_validation as trace_module

        self.patched = [m for m in (jvm, sany_module, tlc_module, trace_module, syntax_module) if hasattr(m, "run_java")]
        for module in self.patched:
            module.run_java = counted  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: object) -> None:
        for module in self.patched:
            module.run_java = self.original  # type: ignore[attr-defined]


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").is_file() else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared benchmarks directory")
    parser.add_argument("--system", action="append", default=[], help="only these systems")
    parser.add_argument("--kind", action="append", default=[], choices=["gold", "example"])
    parser.add_argument("--option", action="append", default=[], help="cascade option KEY=VALUE")
    parser.add_argument("--jvm-profile", action="store_true", help="count JVM starts and seconds per stage")
    parser.add_argument("--cache", type=Path, default=None,
                        help="serve deterministic SANY/TLC runs from this run-cache directory (run twice: warm)")
    args = parser.parse_args()
    if args.cache is not None:
        os.environ[run_cache.ENV] = str(args.cache)
    options = dict(item.split("=", 1) for item in args.option)
    kinds = tuple(args.kind) or ("gold", "example")
    wanted = rs.entries(args.data, kinds, tuple(args.system))  # type: ignore[arg-type]
    print(f"TLA+ cascade, {len(wanted)} specs, {os.cpu_count()} cores; target <= {TARGET_S:.0f} s per spec; "
          f"load average {_load()}")
    print("(by default runtime, conformance and invariants run at the same time, cascade.concurrent: total is the"
          " spec's wall time, not the sum;"
          " load = 1-minute load average after the spec)")
    header = (f"{'spec':52} {'syntax':>7} {'runtime':>8} {'conform':>8} {'invar':>7} {'total':>7}  "
              f"{'load':>5}  values")
    print(header)
    from sysmo.benchmarks.registry import get_task

    totals: list[float] = []
    for entry in wanted:
        task = get_task(f"sysmobench/{entry.system}", data_dir=args.data)
        counter = JvmCounter() if args.jvm_profile else None
        if counter:
            with counter:
                row = rs.score_entry(entry, task, options)
        else:
            row = rs.score_entry(entry, task, options)
        totals.append(row.seconds)
        times = [row.stage_seconds.get(s) for s in rs.STAGES]
        values = " ".join(f"{s[:4]}={'-' if row.values.get(s) is None else f'{row.values[s]:.2f}'}"
                          for s in rs.STAGES)
        cells = " ".join(f"{'-' if t is None else f'{t:.1f}':>{w}}" for t, w in zip(times, (7, 8, 8, 7)))
        flag = "" if row.seconds <= TARGET_S else "  OVER"
        print(f"{entry.label[:52]:52} {cells} {row.seconds:7.1f}  {_load().split()[0]:>5}  {values}{flag}",
              flush=True)
        if counter:
            for (stage, main_class), n in sorted(counter.count.items()):
                print(f"    {stage:12} JVM {main_class:10} x{n:3d}  {counter.seconds[(stage, main_class)]:7.1f} s (summed)")
    if totals:
        print(f"{'max / mean per spec':52} {'':33} {max(totals):7.1f} / {sum(totals) / len(totals):.1f}")
        print(f"load average at the end: {_load()}")


if __name__ == "__main__":
    main()
