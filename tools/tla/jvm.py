"""How SANY and TLC run: one JVM per call, inside the sandbox, with tla2tools.jar and our library read-only."""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path

from sysmo.config import settings
from sysmo.sandbox import Limits, RunResult, get_sandbox
from sysmo.tools.install import jar_manifest_value, tla2tools_jar
from sysmo.tools.tla import jvm_startup, run_cache

LIBRARY_DIR = Path(__file__).resolve().parent / "library"

# C1-only JIT and the serial collector (the short-run flags) halve JVM start-up for SANY (0.55 s -> 0.33 s on a
# small module, 5.7 s -> 2.0 s on the 2.3 MB PGo raftkvs spec).
SANY_JVM_FLAGS = jvm_startup.SHORT_RUN_FLAGS
# A model check keeps C2 (a long search gains from it) with the serial collector: TLC checks on one worker, and the
# parallel collector's threads only cost CPU that concurrent runs share. Measured (`/usr/bin/time`, 2 cores):
# PGo dqueue's grouped liveness check (8,635 states, ~4 s) 9.9 -> 7.0 s of CPU at the same wall time; PGo
# locksvc's NoPriorityInversion check (29,074 states x 30 branches) 72.6 -> 72.4 s of CPU, 115 -> 112 s wall
# (loaded machine); a 20-state check unchanged (about 1 s).
TLC_JVM_FLAGS = ["-XX:+UseSerialGC", "-Xss16m"]
# A model check bounded to at most this many distinct states (``max_states``) is a short run: C1 alone. Measured
# CPU (C2 -> C1): PGo dqueue's grouped liveness check (8,635 states) 7.0 -> 4.3 s; a 20-state check 0.95 -> 0.75 s;
# at the bound itself, SysMoBench's redisraft bug spec stopped at 50,000 states (552k generated), 23.4 -> 24.9 s.
SHORT_CHECK_STATES = 50_000

# Trace replays are short runs too (seconds): C2's compilations cost more than they return. SysMoBench's PGo
# raftkvs replay (2 traces, 1,242 and 1,277 lines): 12-13 s instead of 22-34 s; GPT-5 locksvc's single-trace
# replay (14,907 states) 12-13 s instead of 21-24 s (2 cores at load 13). A long model check keeps C2: the
# 53 s PGo locksvc liveness check took twice the CPU with C1 alone.
TLC_REPLAY_JVM_FLAGS = jvm_startup.SHORT_RUN_FLAGS  # the flags of short simulations (jvm_startup)


def tlc_flags(max_states: int | None) -> list[str]:
    """TLC's JVM flags for a model check with this state bound (None: unbounded; a simulation passes None and
    gets ``jvm_startup``'s choice). ``SYSMO_TLA_FAST_START=0`` keeps C2 for bounded checks too."""
    if max_states is not None and max_states <= SHORT_CHECK_STATES and jvm_startup.enabled():
        return jvm_startup.SHORT_RUN_FLAGS
    return TLC_JVM_FLAGS


JVMS_ENV = "SYSMO_TLA_JVMS"
_slots_lock = threading.Lock()
_slots: dict[int, threading.BoundedSemaphore] = {}


def max_jvms() -> int:
    """SANY/TLC JVMs this process runs at once, whichever stage or attempt asks: one per core (``$SYSMO_TLA_JVMS``).

    Stages that run at the same time (``Cascade.concurrent``), each with its own pool, share these slots, so a
    TLC run keeps a core to itself as when the stages ran one after another: its time limit means the same.
    """
    value = os.environ.get(JVMS_ENV, "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    return max(1, os.cpu_count() or 1)


def jvm_slot() -> threading.BoundedSemaphore:
    size = max_jvms()
    with _slots_lock:
        return _slots.setdefault(size, threading.BoundedSemaphore(size))


def default_parallel() -> int:
    """SANY/TLC processes a stage runs at once: one per core, at most 2 (each TLC run uses one worker)."""
    return max(1, min(2, os.cpu_count() or 1))


def library_dir() -> Path:
    """Our pure-TLA+ modules (SequencesExt, FiniteSetsExt, Functions, Folds, TLCExt): put on TLA-Library."""
    return LIBRARY_DIR


@lru_cache(maxsize=8)
def jar_revision(jar: Path) -> str:
    """The git revision recorded in the jar's manifest (e.g. ``d5b5a7f``), or ``unknown``."""
    return jar_manifest_value(jar, "X-Git-ShortRevision") or "unknown"


def run_java(
    main_class: str,
    args: list[str],
    *,
    files: dict[str, str],
    limits: Limits,
    jvm_flags: list[str],
    heap_mb: int | None = None,
    with_library: bool = True,
    collect: list[str] | None = None,
) -> RunResult:
    """Run ``java <flags> -cp tla2tools.jar <main_class> <args>`` on ``files`` in a fresh sandbox work dir.

    Every call gets its own work dir (and, under bubblewrap, its own /tmp), because SANY extracts the
    standard modules to a temp dir and TLC writes its ``states/`` directory next to the spec.
    """
    jar = tla2tools_jar()
    heap = heap_mb or settings().sandbox.jvm_heap_mb
    # start-up speed only; the runtime image and the launcher are made with the host's JDK, so they serve the local
    # sandboxes, not a container with a Java of its own
    start = jvm_startup.start_up(main_class, args, jvm_flags, LIBRARY_DIR,
                                 in_container=get_sandbox().name == "docker")
    argv = [start.java, f"-Xmx{heap}m", *start.flags, "-Dfile.encoding=UTF-8"]
    readonly = [jar, *start.readonly]
    if with_library:
        argv.append(f"-DTLA-Library={LIBRARY_DIR}")
        readonly.append(LIBRARY_DIR)
    argv += ["-cp", os.pathsep.join(str(p) for p in start.classpath), start.main_class, *args]

    def run() -> RunResult:
        with jvm_slot():  # the time limit starts once the JVM has a core (max_jvms)
            return get_sandbox().run(argv, files=files, readonly_paths=readonly, limits=limits, collect=collect)

    # deterministic runs are served from the content-addressed cache when SYSMO_TLA_RUN_CACHE is set
    # the sandbox (a served run's record names its isolation), the launcher (its jar named by a digest of its
    # source), the runtime image and the archive are part of a run
    sandbox = get_sandbox()
    launch = (f"launch={sandbox.name}:{getattr(sandbox, 'mode', '')}:{start.main_class}:"
              f"{','.join(sorted(p.name for p in start.readonly))}")
    return run_cache.cached(run, main_class, [*args, f"timeout={limits.timeout_s}", launch], files, jvm_flags, heap,
                            [p for p in readonly if p not in start.readonly], collect)
