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
  ``jvm.tlc_flags``);
- TLC started through ``TLCMain.java`` (``launcher``), which calls TLC's own main after giving RMI server sockets
  that wait in Java: TLC exports its fingerprint set over RMI, and at exit the JVM waited up to 300 ms for the
  thread blocked in the socket's native ``accept()`` (HotSpot waits for threads in native code before it exits).
  Compiled once by the ``javac`` beside the configured Java into ``<jvm_dir>/tlc-main-<hash>.jar``; without
  ``javac`` (a JRE) TLC starts from ``tlc2.TLC`` as before.

Measured on 2 shared cores, one PGo dqueue runtime simulation: 2.3 s with the default flags, 1.2 s with the
archive and C1; a 4-state model check 0.73-0.82 s of CPU on Java 17 with the archive, 0.47-0.52 s on the trimmed
runtime with its archive, a small SANY parse 0.35-0.39 -> 0.19-0.28 s; with the launcher a 4-state model check
ends in 0.29-0.32 s of wall time instead of 0.61-0.66 s (same CPU). ``SYSMO_TLA_FAST_START=0`` turns all four
off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from sysmo.config import settings
from sysmo.errors import SysmoError
from sysmo.log import get_logger
from sysmo.tools.install import java_binary, tla2tools_jar
from sysmo.tools.java_build import compiled_jar, javac_beside, made_once

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
LAUNCHER_SOURCE = Path(__file__).resolve().parent / "TLCMain.java"
LAUNCHER_CLASS = "sysmo.tla.TLCMain"
TLC_MAIN = "tlc2.TLC"
_lock = threading.Lock()
_archive: dict[str, Path | None] = {}  # per jar, launcher and Java runtime: the archive this process uses
_image: dict[str, Path | None] = {}  # per configured Java: the trimmed runtime's java (None: the Java itself)
_launcher: dict[str, Path | None] = {}  # per configured Java: the launcher's jar (None: TLC starts from tlc2.TLC)


class StartUp(NamedTuple):
    """How one SANY/TLC run starts: ``java <flags> -cp <classpath> <main_class> <args>``."""

    java: str
    flags: list[str]
    classpath: list[Path]  # tla2tools.jar first, then the launcher's jar when there is one
    main_class: str  # the launcher's class in place of tlc2.TLC, or the class asked for
    readonly: list[Path]  # what the sandbox must show besides the jar: runtime image, launcher, archive

    @property
    def launcher(self) -> Path | None:
        return self.classpath[1] if len(self.classpath) > 1 else None

    @property
    def archive(self) -> Path | None:
        return next((Path(f.split("=", 1)[1]) for f in self.flags if f.startswith("-XX:SharedArchiveFile=")), None)


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
        made = made_once(path, path / "bin" / "java", lambda: _make_image(path, real, jlink),
                         "jvm_startup.image_failed")
        _image[real.as_posix()] = path if made else None
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


def launcher(configured: str | None = None) -> Path | None:
    """The jar of ``TLCMain.java`` (TLC's main without the exit's wait for RMI's native accept), compiled once by
    the ``javac`` beside the configured java into ``<jvm_dir>/tlc-main-<hash>.jar`` (``tools.java_build``); None
    without ``javac`` (a JRE), when it does not compile, or when the jvm dir cannot be written."""
    configured = configured or java_binary()
    real = Path(os.path.realpath(configured))
    with _lock:
        known = _launcher.get(real.as_posix(), False)
        if known is None or (known and known.is_file()):
            return known
        javac = javac_beside(str(real))
        # bytecode for Java 11, the oldest Java TLC runs on, whatever the JDK
        _launcher[real.as_posix()] = None if javac is None else compiled_jar(
            "tlc-main", LAUNCHER_SOURCE, tla2tools_jar(), javac, "jvm_startup.launcher_failed")
        return _launcher[real.as_posix()]


def _sandbox_view() -> str:
    """How the sandbox shows the tools (an archive made in one view is unusable in another)."""
    from sysmo.sandbox import get_sandbox
    from sysmo.sandbox.base import TOOLS_INSIDE

    box = get_sandbox()
    return f"{box.name}:{getattr(box, 'mode', getattr(box, 'image', ''))}:{TOOLS_INSIDE}"


def archive(library: Path, runtime: str | None = None, classpath: list[Path] | None = None) -> Path | None:
    """The CDS archive for this Java runtime (default ``java()``) and class path (default tla2tools.jar alone; a
    run's class path must be the archive's), made on first use (None if it cannot be made)."""
    jar, runtime = tla2tools_jar(), runtime or java()
    classpath = classpath or [jar]
    with _lock:
        stat = jar.stat()
        tag = hashlib.sha256(f"{jar}:{stat.st_size}:{stat.st_mtime_ns}:{_identity(runtime)}:{classpath[1:]}:"
                             f"{_sandbox_view()}".encode()).hexdigest()
        known = _archive.get(tag, False)
        if known is None or (known and known.is_file()):  # made (or failed) before in this process
            return known
        path = settings().jvm_dir / f"tla2tools-{tag[:16]}.jsa"
        if not path.is_file():
            _make(path, runtime, classpath, library)
        _archive[tag] = path if path.is_file() else None
        return _archive[tag]


def _make(path: Path, java: str, classpath: list[Path], library: Path) -> None:
    """Dump the archive by running TLC in the sandbox the runs use: the archive records the class path and the
    runtime's own archive by their paths, which inside the sandbox are not the host's (``ToolView``)."""
    from sysmo.sandbox import Limits, get_sandbox

    path.parent.mkdir(parents=True, exist_ok=True)
    main = LAUNCHER_CLASS if len(classpath) > 1 else TLC_MAIN  # the launcher's jar follows tla2tools.jar
    java_home = Path(os.path.realpath(java)).parent.parent
    readonly = [*classpath, library] + ([] if java_home.is_relative_to("/usr") else [java_home])
    with tempfile.TemporaryDirectory(prefix="sysmo-cds-") as work:
        folder = Path(work)
        argv = [java, "-XX:ArchiveClassesAtExit=archive.jsa", "-Xmx1g", "-Xlog:disable", "-Xlog:all=off",
                f"-DTLA-Library={library}", "-cp", os.pathsep.join(str(p) for p in classpath),
                main, "-workers", "1", "-metadir", "states", "-coverage", "1", "SysmoWarmUp"]
        try:  # TLC also runs SANY, so both tools' classes are loaded (parsing, BFS, liveness)
            get_sandbox().run(argv, workdir=folder, readonly_paths=readonly,
                              files={"SysmoWarmUp.tla": WARM_UP_SPEC, "SysmoWarmUp.cfg": WARM_UP_CFG},
                              limits=Limits(timeout_s=120, memory_mb=2048))
        except SysmoError as exc:
            log.warning("jvm_startup.archive_failed", error=str(exc))
            return
        staged = folder / "archive.jsa"
        if staged.is_file() and not staged.is_symlink() and staged.stat().st_size > 0:
            os.replace(staged, path)  # atomic: a parallel maker's archive is as good as ours
            log.info("jvm_startup.archive_made", path=str(path), bytes=path.stat().st_size)
        else:
            log.warning("jvm_startup.archive_failed", error="the JVM wrote no archive")


def prepare(library: Path) -> StartUp:
    """Make the runtime image, the launcher and the archive now (``sysmo tools install``), not at the first
    SANY/TLC run: how a model check will start."""
    return start_up(TLC_MAIN, [], [], library)


def start_up(main_class: str, args: list[str], jvm_flags: list[str], library: Path, *, in_container: bool = False,
             ) -> StartUp:
    """How to start ``main_class`` with ``args``: the java binary, the JVM flags, the class path and main class, and
    the extra read-only paths they need. ``in_container``: a container's own Java runs it, so the configured Java
    with the archive made for it, without the runtime image or the launcher (both made on this host)."""
    configured, jar = java_binary(), tla2tools_jar()
    if not enabled():
        return StartUp(configured, jvm_flags, [jar], main_class, [])
    image = None if in_container else runtime_image(configured)
    runtime, extra = (str(image / "bin" / "java"), [image]) if image is not None else (configured, [])
    chosen = SHORT_RUN_FLAGS if short_simulation(main_class, args) else jvm_flags
    tlc_main = None if in_container else launcher(configured)  # on SANY's class path too: the archive's is one
    classpath = [jar, tlc_main] if tlc_main is not None else [jar]
    if tlc_main is not None:
        extra.append(tlc_main)
        main_class = LAUNCHER_CLASS if main_class == TLC_MAIN else main_class
    found = archive(library, runtime, classpath)
    if found is None:
        return StartUp(runtime, chosen, classpath, main_class, extra)
    return StartUp(runtime, [*chosen, f"-XX:SharedArchiveFile={found}", *QUIET], classpath, main_class,
                   [*extra, found])
