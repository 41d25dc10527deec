"""Full TLA+ cascade time per spec: each PGo gold spec and each SysMoBench example spec, seconds per stage.

Run: ``python speed/tla_cascade_speed.py [--data DIR] [--system locksvc ...] [--kind gold|example]
[--mode sysmo|harness] [--option KEY=VALUE ...] [--baseline KEY=VALUE ...] [--jvm-profile] [--cache DIR]``.
Target on a 2-core machine: at most 60 s per spec for the whole cascade (syntax, runtime, conformance,
invariants) in the default (``sysmo``, deterministic-bound) scoring mode, with SysMoBench's settings (20 runtime
simulations of 50 x 50 steps, every trace, every invariant template). ``--jvm-profile`` also counts the JVMs
started (SANY and TLC) and their summed seconds per stage, to show where the time goes. Each row also gives the CPU
seconds sysmo and its JVMs used (``CpuMeter``: the work, whatever else runs on the machine) and the 1-minute load
average: the machine is shared. The baseline is measured in the same run: ``--baseline KEY=VALUE`` scores each
spec first with those options as well (``BEFORE``: the cascade without this round's levers) and prints the ratio
of the two wall times and whether the values are identical; without it, a fixed TLC calibration check
(``calibration``) is timed before each spec and the ratio spec / calibration is printed, so figures taken under
different loads can be compared.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

from sysmo.reproduce import sysmobench as rs
from sysmo.tools.tla import jvm, run_cache

BEFORE = ("invariants.liveness_at_end=false", "invariants.merge_liveness=false", "invariants.by_instance=false",
          "invariants.dedupe_liveness=false", "invariants.instance_batches=false",
          "invariants.merge_same_bound=false",
          "runtime.shared_parse=false")  # the levers of docs/tla-cascade-speed.md
CALIBRATION_SPEC = """---- MODULE SysmoCalibration ----
EXTENDS Naturals
VARIABLES x, y, z
Init == x = 0 /\\ y = 0 /\\ z = 0
Next == \\/ x < 30 /\\ x' = x + 1 /\\ UNCHANGED <<y, z>>
        \\/ y < 30 /\\ y' = y + 1 /\\ UNCHANGED <<x, z>>
        \\/ z < 12 /\\ z' = z + 1 /\\ UNCHANGED <<x, y>>
Small == x + y + z <= 72
====
"""
DEFAULT_DATA = Path(os.environ.get("SYSMO_TEST_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "benchmarks"))
TARGET_S = 60.0


STAGE_MODULES = (  # the first module (or package) on the calling thread's stack names the stage a JVM ran for
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
    return next((stage for module, stage in STAGE_MODULES
                 if any(m == module or m.startswith(f"{module}.") for m in modules)), "-")


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


class CpuMeter:
    """CPU seconds of this process and every process it starts (the sandboxed JVMs), read from /proc every
    0.1 s: a measure of the work that does not depend on the machine's load (the last 0.1 s of each JVM can
    be missed, so it is a slight underestimate)."""

    TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def __init__(self) -> None:
        self.seen: dict[tuple[int, str], float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.own = 0.0

    @classmethod
    def _stats(cls) -> dict[int, tuple[int, str, float]]:
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            # after the name: state ppid ... utime(12) stime(13) ... starttime(20), 0-based from state
            found[int(entry.name)] = (int(fields[1]), fields[19], (int(fields[11]) + int(fields[12])) / cls.TICK)
        return found

    def _poll(self) -> None:
        me = os.getpid()
        while not self.stop.wait(0.1):
            stats = self._stats()
            children: defaultdict[int, list[int]] = defaultdict(list)
            for pid, (ppid, _, _) in stats.items():
                children[ppid].append(pid)
            pending = list(children[me])
            while pending:
                pid = pending.pop()
                pending += children[pid]
                _, started, cpu = stats[pid]
                self.seen[(pid, started)] = max(cpu, self.seen.get((pid, started), 0.0))

    def __enter__(self) -> CpuMeter:
        times = os.times()
        self.own = times.user + times.system
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        times = os.times()
        self.own = times.user + times.system - self.own

    @property
    def seconds(self) -> float:
        return self.own + sum(self.seen.values())


def calibration_seconds() -> float:
    """Wall seconds of one fixed TLC model check (12,493 states, one worker, in the sandbox, never from the run
    cache): the same work whatever the spec, so spec seconds / these seconds compare runs under different loads."""
    from sysmo.contracts.artifact import Artifact, Language
    from sysmo.tools.tla import tlc

    cached = os.environ.pop(run_cache.ENV, None)
    try:
        started = time.monotonic()
        result = tlc.model_check(Artifact(language=Language.TLA, files={"SysmoCalibration.tla": CALIBRATION_SPEC}),
                                 "INIT Init\nNEXT Next\nINVARIANT Small\n", check_deadlock=False,
                                 timeout_s=600)
        assert result.outcome.value == "ok", result.summary(3)
        return time.monotonic() - started
    finally:
        if cached is not None:
            os.environ[run_cache.ENV] = cached


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").is_file() else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared benchmarks directory")
    parser.add_argument("--system", action="append", default=[], help="only these systems")
    parser.add_argument("--kind", action="append", default=[], choices=["gold", "example"])
    parser.add_argument("--mode", default="sysmo", choices=["sysmo", "harness"], help="scoring mode (default sysmo)")
    parser.add_argument("--option", action="append", default=[], help="cascade option KEY=VALUE")
    parser.add_argument("--baseline", action="append", default=None, nargs="?", const="",
                        help="also score each spec with these options first (KEY=VALUE; bare --baseline: the "
                             f"levers off, {' '.join(BEFORE)}) and print the ratio")
    parser.add_argument("--jvm-profile", action="store_true", help="count JVM starts and seconds per stage")
    parser.add_argument("--cache", type=Path, default=None,
                        help="serve deterministic SANY/TLC runs from this run-cache directory (run twice: warm)")
    args = parser.parse_args()
    if args.cache is not None:
        os.environ[run_cache.ENV] = str(args.cache)
    options = {"mode": args.mode, **dict(item.split("=", 1) for item in args.option)}
    baseline = None
    if args.baseline is not None:
        given = [b for b in args.baseline if b] or list(BEFORE)
        baseline = {**options, **dict(item.split("=", 1) for item in given)}
    kinds = tuple(args.kind) or ("gold", "example")
    wanted = rs.entries(args.data, kinds, tuple(args.system))  # type: ignore[arg-type]
    print(f"TLA+ cascade, {len(wanted)} specs, {os.cpu_count()} cores, mode {args.mode}; target <= {TARGET_S:.0f} s "
          f"per spec; load average {_load()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if baseline is not None:
        print(f"baseline (same run, before each spec): {' '.join(f'{k}={v}' for k, v in baseline.items())}")
    print("(by default runtime, conformance and invariants run at the same time, cascade.concurrent: total is the"
          " spec's wall time, not the sum;"
          " cpu = CPU seconds of sysmo and its JVMs, whatever the load; load = 1-minute load average after the spec)")
    header = (f"{'spec':52} {'syntax':>7} {'runtime':>8} {'conform':>8} {'invar':>7} {'total':>7} {'cpu':>6}  "
              f"{'load':>5}  values  | target met? | ratio")
    print(header)
    from sysmo.benchmarks.registry import get_task

    totals: list[float] = []
    cpu_seconds: list[float] = []
    def scored(entry, task, opts, label):
        counter = JvmCounter() if args.jvm_profile else None
        with CpuMeter() as cpu:
            if counter:
                with counter:
                    row = rs.score_entry(entry, task, opts)
            else:
                row = rs.score_entry(entry, task, opts)
        times = [row.stage_seconds.get(s) for s in rs.STAGES]
        values = " ".join(f"{s[:4]}={'-' if row.values.get(s) is None else f'{row.values[s]:.2f}'}"
                          for s in rs.STAGES)
        cells = " ".join(f"{'-' if t is None else f'{t:.1f}':>{w}}" for t, w in zip(times, (7, 8, 8, 7)))
        met = "yes" if row.seconds <= TARGET_S else "NO"
        print(f"{label[:52]:52} {cells} {row.seconds:7.1f} {cpu.seconds:6.0f}  {_load().split()[0]:>5}  "
              f"{values}  | {TARGET_S:.0f} s {met:>4}", end="", flush=True)
        return row, cpu.seconds, counter, values

    for entry in wanted:
        task = get_task(f"sysmobench/{entry.system}", data_dir=args.data)
        before = None
        if baseline is not None:
            before = scored(entry, task, baseline, f"BEFORE {entry.label}")
            print(flush=True)
        else:
            calibration = calibration_seconds()
        row, cpu_s, counter, values = scored(entry, task, options, entry.label)
        cpu_seconds.append(cpu_s)
        totals.append(row.seconds)
        if before is not None:
            same = "same values" if before[3] == values else f"VALUES DIFFER from {before[3]}"
            print(f" | {row.seconds / before[0].seconds:.2f} x before, {same}", flush=True)
        else:
            print(f" | {row.seconds / calibration:.0f} x calibration ({calibration:.1f} s)", flush=True)
        if counter:
            for (stage, main_class), n in sorted(counter.count.items()):
                print(f"    {stage:12} JVM {main_class:10} x{n:3d}  {counter.seconds[(stage, main_class)]:7.1f} s (summed)")
    if totals:
        print(f"{'max / mean per spec':52} {'':33} {max(totals):7.1f} / {sum(totals) / len(totals):.1f}  "
              f"cpu {max(cpu_seconds):.0f} / {sum(cpu_seconds) / len(cpu_seconds):.0f}")
        print(f"load average at the end: {_load()}")


if __name__ == "__main__":
    main()
