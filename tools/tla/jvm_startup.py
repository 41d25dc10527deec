"""Faster JVM starts for SANY and TLC: a trimmed Java runtime, a class-data-sharing archive, and C1 for short runs.

Most TLC runs of the cascade are short (the runtime stage's 20 simulations of 50 behaviours x 50 steps):
their time is JVM start-up and class loading, not checking. Three things change only how fast the JVM starts,
never what SANY or TLC compute:

- a Java runtime without Flight Recorder (``runtime_image``): ``jlink`` from the configured Java, with the
  modules tla2tools.jar uses (``jdeps``) but ``jdk.jfr``. TLC logs its messages as JFR events, and the first
  one sets up JFR's whole event machinery even when nothing records (about 0.25 s of CPU of each start); TLC is
  made to run without the module (``util.TLAFlightRecorder`` ignores a missing ``jdk.jfr``). Made once per Java under
  ``<jvm_dir>/runtime-<tag>`` (``sysmo tools install`` makes it ahead); without ``jlink`` and the JDK's
  modules (a JRE) runs use the configured Java itself;
- an application class-data-sharing archive (``-XX:SharedArchiveFile``) of the classes SANY and TLC load,
  made once per jar and Java runtime by running our own small spec outside the sandbox
  (``-XX:ArchiveClassesAtExit``), kept under ``<jvm_dir>``; if it cannot be made or read, runs go on
  without it (``-Xshare:auto``, the JVM's log lines off so nothing reaches TLC's output);
- for a short simulation (``num x depth`` at most ``SHORT_SIMULATION_STEPS``), the C1 compiler and the serial
  collector, as SANY already uses (a long search keeps C2; a model check bounded to few states is short too:
  ``jvm.tlc_flags``).

Measured on 2 shared cores, one PGo dqueue runtime simulation: 2.3 s with the default flags, 1.2 s with the
archive and C1; a 4-state model check 0.73-0.82 s of CPU on Java 17 with the archive, 0.47-0.52 s on the trimmed
runtime with its archive, a small SANY parse 0.35-0.39 -> 0.19-0.28 s. ``SYSMO_TLA_FAST_START=0`` turns all
three off.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
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
# tla2tools.jar's modules (``jdeps --print-module-deps``: java.base, java.desktop, java.logging, java.management,
# java.naming, java.rmi, java.security.sasl, jdk.attach, jdk.jfr, jdk.unsupported) but jdk.jfr, as java.se and
# the few jdk ones; the sandbox runs Java with LANG=C.UTF-8, so java.base's own locale data is all it reads
IMAGE_MODULES = ("java.se", "jdk.unsupported", "jdk.attach", "jdk.management", "jdk.charsets", "jdk.zipfs",
                 "jdk.net", "jdk.crypto.ec")
LEFT_OUT = "jdk.jfr"
_lock = threading.Lock()
_archive: dict[str, Path | None] = {}  # per jar and Java runtime: the archive this process uses
_image: dict[str, Path | None] = {}  # per configured Java: the trimmed runtime's java (None: the Java itself)


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


def _identity(runtime: str) -> str:
    """What the archive made for ``runtime`` depends on: our runtime image is named by its Java's version
    (``runtime_image``) and its folder's time tells a remade one; any other Java says its version."""
    home = Path(os.path.realpath(runtime)).parent.parent
    if home.parent == settings().jvm_dir.resolve() and home.name.startswith("runtime-"):
        return f"{home}:{home.stat().st_mtime_ns}"
    return f"{os.path.realpath(runtime)}:{_java_version(runtime)}"


def _modules(java_path: Path) -> set[str]:
    """The modules of a Java runtime: its ``release`` file's MODULES line, else ``java --list-modules``."""
    release = java_path.parent.parent / "release"
    text = release.read_text(encoding="utf-8", errors="replace") if release.is_file() else ""
    listed = next((line.split("=", 1)[1].strip().strip('"') for line in text.splitlines()
                   if line.startswith("MODULES=")), None)
    if listed is not None:
        return set(listed.split())
    result = subprocess.run([str(java_path), "--list-modules"], capture_output=True, text=True, timeout=60,
                            check=False)
    return {line.split("@", 1)[0].strip() for line in result.stdout.splitlines() if line.strip()}


def java() -> str:
    """The java binary SANY and TLC run on: the trimmed runtime's (``runtime_image``), else the configured one."""
    configured = java_binary()
    if not enabled():
        return configured
    image = runtime_image(configured)
    return str(image / "bin" / "java") if image is not None else configured


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Held by one process at a time (two test workers, two ``sysmo`` commands making the same file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def runtime_image(configured: str | None = None) -> Path | None:
    """The Java runtime without JFR made from the configured Java by ``jlink`` (once, on first use), or None when it
    cannot be made: no ``jlink`` or no module files beside that Java (a JRE), or a failed ``jlink``."""
    configured = configured or java_binary()
    real = Path(os.path.realpath(configured))
    with _lock:
        if real.as_posix() in _image:
            known = _image[real.as_posix()]
            if known is None or (known / "bin" / "java").is_file():
                return known
        jlink = real.parent / "jlink"
        if not jlink.is_file():
            _image[real.as_posix()] = None
            return None
        tag = hashlib.sha256(f"{real}:{_java_version(str(real))}".encode()).hexdigest()[:16]
        path = settings().jvm_dir / f"runtime-{tag}"
        try:
            if not (path / "bin" / "java").is_file():
                with _file_lock(path.with_name(f"{path.name}.lock")):
                    if not (path / "bin" / "java").is_file():
                        _make_image(path, real, jlink)
        except OSError as exc:  # e.g. a read-only home: runs go on with the Java as it is
            log.warning("jvm_startup.image_failed", error=str(exc), path=str(path))
        _image[real.as_posix()] = path if (path / "bin" / "java").is_file() else None
        return _image[real.as_posix()]


def _make_image(path: Path, java_path: Path, jlink: Path) -> None:
    available = _modules(java_path)
    modules = [m for m in IMAGE_MODULES if m in available]
    if "java.se" not in modules:
        log.warning("jvm_startup.image_failed", error="the Java lists no java.se module", java=str(java_path))
        return
    staged = path.with_name(f".{path.name}-{os.getpid()}")
    shutil.rmtree(staged, ignore_errors=True)
    base = [str(jlink), "--add-modules", ",".join(modules), "--strip-debug", "--no-header-files", "--no-man-pages",
            "--output", str(staged)]
    try:  # with its own base class-data archive (jlink's plugin; older jlinks: the JVM's -Xshare:dump)
        made = subprocess.run([*base[:-2], "--generate-cds-archive", *base[-2:]], capture_output=True, text=True,
                              timeout=600, check=False)
        if made.returncode != 0:
            shutil.rmtree(staged, ignore_errors=True)
            made = subprocess.run(base, capture_output=True, text=True, timeout=600, check=False)
            if made.returncode == 0:
                subprocess.run([str(staged / "bin" / "java"), "-Xshare:dump"], capture_output=True, timeout=300,
                               check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("jvm_startup.image_failed", error=str(exc))
        shutil.rmtree(staged, ignore_errors=True)
        return
    image_java = staged / "bin" / "java"
    if made.returncode != 0 or not image_java.is_file():
        log.warning("jvm_startup.image_failed", error=(made.stderr or made.stdout).strip()[-500:])
        shutil.rmtree(staged, ignore_errors=True)
        return
    if LEFT_OUT in _modules(image_java):
        log.warning("jvm_startup.image_failed", error=f"{LEFT_OUT} is in the image")
        shutil.rmtree(staged, ignore_errors=True)
        return
    try:
        os.replace(staged, path)
    except OSError:  # a folder of that name that is not a whole image (left by hand): ours is not used
        shutil.rmtree(staged, ignore_errors=True)
        raise
    log.info("jvm_startup.image_made", path=str(path), modules=modules)


def archive(library: Path, runtime: str | None = None) -> Path | None:
    """The CDS archive for this jar and Java runtime (default ``java()``), made on first use (None if it cannot
    be made)."""
    jar, runtime = tla2tools_jar(), runtime or java()
    with _lock:
        stat = jar.stat()
        tag = hashlib.sha256(f"{jar}:{stat.st_size}:{stat.st_mtime_ns}:{_identity(runtime)}".encode()).hexdigest()
        known = _archive.get(tag, False)
        if known is None or (known and known.is_file()):  # made (or failed) before in this process
            return known
        path = settings().jvm_dir / f"tla2tools-{tag[:16]}.jsa"
        if not path.is_file():
            _make(path, runtime, jar, library)
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


def prepare(library: Path) -> tuple[str, Path | None]:
    """Make the runtime image and the archive now (``sysmo tools install``), not at the first SANY/TLC run:
    the java binary runs will use, and the archive (None: none could be made)."""
    return java(), archive(library) if enabled() else None


def flags(main_class: str, args: list[str], jvm_flags: list[str], library: Path, *, trimmed: bool = True,
          ) -> tuple[str, list[str], list[Path]]:
    """The java binary, the JVM flags to use and the extra read-only paths they need (``trimmed=False``: the
    configured Java instead of the runtime image, with the archive made for it)."""
    configured = java_binary()
    if not enabled():
        return configured, jvm_flags, []
    image = runtime_image(configured) if trimmed else None
    runtime, extra = (str(image / "bin" / "java"), [image]) if image is not None else (configured, [])
    chosen = SHORT_RUN_FLAGS if short_simulation(main_class, args) else jvm_flags
    found = archive(library, runtime)
    if found is None:
        return runtime, chosen, extra
    return runtime, [*chosen, f"-XX:SharedArchiveFile={found}", *QUIET], [*extra, found]
