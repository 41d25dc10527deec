"""Full TLA+ cascade time per spec: each PGo gold spec and each SysMoBench example spec, seconds per stage.

Run: ``python speed/tla_cascade_speed.py [--data DIR] [--system locksvc ...] [--kind gold|example]
[--option KEY=VALUE ...] [--jvm-profile] [--cache DIR]``.
Target on a 2-core machine: at most 60 s per spec for the whole cascade (syntax, runtime, conformance,
invariants), with SysMoBench's settings (20 runtime simulations of 50 x 50 steps, every trace, every
invariant template). ``--jvm-profile`` also counts the JVMs started (SANY and TLC) and their summed seconds per
stage, to show where the time goes.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

from sysmo.evals import reproduce_sysmobench as rs
from sysmo.tools.tla import jvm, run_cache

DEFAULT_DATA = Path(os.environ.get("SYSMO_TEST_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "benchmarks"))
TARGET_S = 60.0


class JvmCounter:
    """Wraps ``jvm.run_java`` to count JVM starts and their seconds per main class and per stage."""

    def __init__(self) -> None:
        self.stage = "-"
        self.count: Counter[tuple[str, str]] = Counter()
        self.seconds: defaultdict[tuple[str, str], float] = defaultdict(float)
        self.lock = threading.Lock()
        self.original = jvm.run_java

    def __enter__(self) -> JvmCounter:
        def counted(main_class, args, **kwargs):
            started = time.perf_counter()
            try:
                return self.original(main_class, args, **kwargs)
            finally:
                key = (self.stage, main_class.rsplit(".", 1)[-1])
                with self.lock:
                    self.count[key] += 1
                    self.seconds[key] += time.perf_counter() - started

        import sysmo.evals.metrics.tla_syntax as syntax_module
        import sysmo.tools.tla.sany as sany_module
        import sysmo.tools.tla.tlc as tlc_module
        import sysmo.tools.tla.trace_validation as trace_module

        import sysmo.evals.cascades.tla as cascade_module

        self.patched = [m for m in (jvm, sany_module, tlc_module, trace_module, syntax_module) if hasattr(m, "run_java")]
        for module in self.patched:
            module.run_java = counted  # type: ignore[attr-defined]
        self.stages = {n: getattr(cascade_module, f"{n}_stage") for n in rs.STAGES}

        def staged(name, fn):
            def run(*a, **k):
                self.stage = name
                return fn(*a, **k)
            return run

        for name, fn in self.stages.items():
            setattr(cascade_module, f"{name}_stage", staged(name, fn))
        self.cascade_module = cascade_module
        return self

    def __exit__(self, *exc: object) -> None:
        for module in self.patched:
            module.run_java = self.original  # type: ignore[attr-defined]
        for name, fn in self.stages.items():
            setattr(self.cascade_module, f"{name}_stage", fn)


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
    print(f"TLA+ cascade, {len(wanted)} specs, {os.cpu_count()} cores; target <= {TARGET_S:.0f} s per spec")
    header = f"{'spec':52} {'syntax':>7} {'runtime':>8} {'conform':>8} {'invar':>7} {'total':>7}  values"
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
        print(f"{entry.label[:52]:52} {cells} {row.seconds:7.1f}  {values}{flag}", flush=True)
        if counter:
            for (stage, main_class), n in sorted(counter.count.items()):
                print(f"    {stage:12} JVM {main_class:10} x{n:3d}  {counter.seconds[(stage, main_class)]:7.1f} s (summed)")
    if totals:
        print(f"{'max / mean per spec':52} {'':33} {max(totals):7.1f} / {sum(totals) / len(totals):.1f}")


if __name__ == "__main__":
    main()
