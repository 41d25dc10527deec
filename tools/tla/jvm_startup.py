"""Faster JVM starts for SANY and TLC: a class-data-sharing archive of tla2tools.jar, and C1 for short runs.

Most TLC runs of the cascade are short (the runtime stage's 20 simulations of 50 behaviours x 50 steps):
their time is JVM start-up and class loading, not checking. Two flags change only how fast the JVM starts,
never what SANY or TLC compute:

- an application class-data-sharing archive (``-XX:SharedArchiveFile``) of the classes SANY and TLC load,
  made once per jar and Java version by running our own small spec outside the sandbox
  (``-XX:ArchiveClassesAtExit``), kept under ``<home>/jvm``; if it cannot be made or read, runs go on
  without it (``-Xshare:auto``, the JVM's log lines off so nothing reaches TLC's output);
- for a short simulation (``num x depth`` at most ``SHORT_SIMULATION_STEPS``), the C1 compiler and the serial
  collector, as SANY already uses (a long search keeps C2; a model check bounded to few states is short too:
  ``jvm.tlc_flags``).

Measured on 2 shared cores, one PGo dqueue runtime simulation: 2.3 s with the default flags, 1.2 s with both.
``SYSMO_TLA_FAST_START=0`` turns both off.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from sysmo.config import settings
from sysmo.log import get_logger
from sysmo.tools.install import java_binary, tla2tools_jar

log = get_logger(__name__)

ENV = "SYSMO_TLA_FAST_START"
SHORT_SIMULATION_STEPS = 10_000
SHORT_RUN_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss16m"]
QUIET = ["-Xshare:auto", "-Xlog:disable", "-Xlog:all=off"]
WARM_UP_SPEC = """---- MODULE SysmoWarmUp ----
EXTENDS Naturals, Sequences, FiniteSets, TLC
VARIABLES x, q
Init == x = 0 /\\ q = <<>>
Put == Len(q) < 2 /\\ q' = Append(q, x) /\\ x' = (x + 1) % 3
Take == q # <<>> /\\ q' = Tail(q) /\\ UNCHANGED x
Next == Put \\/ Take
Safe == Cardinality({x}) = 1 /\\ Len(q) <= 2
Live == []<>(q = <<>>)
====
"""
WARM_UP_CFG = "INIT Init\nNEXT Next\nINVARIANT Safe\nPROPERTY Live\n"
_lock = threading.Lock()
_archive: dict[str, Path | None] = {}  # per jar and Java: the archive this process uses


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "no", "false")


def short_simulation(main_class: str, args: list[str]) -> bool:
    """A TLC ``-simulate num=N -depth D`` run with N x D at most ``SHORT_SIMULATION_STEPS``."""
    if main_class != "tlc2.TLC" or "-simulate" not in args:
        return False
    try:
        num = int(next(a for a in args if a.startswith("num=")).split("=", 1)[1])
        depth = int(args[args.index("-depth") + 1])
    except (StopIteration, ValueError, IndexError):
        return False
    return num * depth <= SHORT_SIMULATION_STEPS


@lru_cache(maxsize=4)
def _java_version(java: str) -> str:
    """``java -version`` (a JVM start of its own: asked once per process and binary, not before every run)."""
    result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    return (result.stderr or result.stdout).strip()


def archive(library: Path) -> Path | None:
    """The CDS archive for this jar and Java, made on first use (None if it cannot be made)."""
    jar, java = tla2tools_jar(), java_binary()
    with _lock:
        stat = jar.stat()
        tag = hashlib.sha256(f"{jar}:{stat.st_size}:{stat.st_mtime_ns}:{_java_version(java)}".encode()).hexdigest()
        known = _archive.get(tag, False)
        if known is None or (known and known.is_file()):  # made (or failed) before in this process
            return known
        path = settings().home / "jvm" / f"tla2tools-{tag[:16]}.jsa"
        if not path.is_file():
            _make(path, java, jar, library)
        _archive[tag] = path if path.is_file() else None
        return _archive[tag]


def _make(path: Path, java: str, jar: Path, library: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sysmo-cds-") as work:
        folder = Path(work)
        (folder / "SysmoWarmUp.tla").write_text(WARM_UP_SPEC, encoding="utf-8")
        (folder / "SysmoWarmUp.cfg").write_text(WARM_UP_CFG, encoding="utf-8")
        staged = folder / "archive.jsa"
        base = [java, f"-XX:ArchiveClassesAtExit={staged}", "-Xlog:disable", "-Xlog:all=off",
                f"-DTLA-Library={library}", "-cp", str(jar)]
        try:  # TLC also runs SANY, so both tools' classes are loaded (parsing, BFS, liveness)
            subprocess.run([*base, "tlc2.TLC", "-workers", "1", "-metadir", "states", "-coverage", "1",
                            "SysmoWarmUp"], cwd=folder, capture_output=True, timeout=120, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("jvm_startup.archive_failed", error=str(exc))
            return
        if staged.is_file() and staged.stat().st_size > 0:
            os.replace(staged, path)  # atomic: a parallel maker's archive is as good as ours
            log.info("jvm_startup.archive_made", path=str(path), bytes=path.stat().st_size)
        else:
            log.warning("jvm_startup.archive_failed", error="the JVM wrote no archive")


def flags(main_class: str, args: list[str], jvm_flags: list[str], library: Path) -> tuple[list[str], list[Path]]:
    """The JVM flags to use and the extra read-only paths they need."""
    if not enabled():
        return jvm_flags, []
    chosen = SHORT_RUN_FLAGS if short_simulation(main_class, args) else jvm_flags
    found = archive(library)
    if found is None:
        return chosen, []
    return [*chosen, f"-XX:SharedArchiveFile={found}", *QUIET], [found]
