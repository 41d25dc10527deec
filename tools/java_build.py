"""Small Java helpers of our own, compiled once by the ``javac`` beside the configured Java into ``<jvm_dir>``.

Two sources ship with sysmo: ``tools/tla/TLCMain.java`` (TLC's main without the exit's wait for RMI) and
``tools/plantuml/PlantUMLPipe.java`` (PlantUML over stdin/stdout). Each is compiled against its tool's jar into
``<jvm_dir>/<name>-<hash of source and classpath>.jar``, one process at a time (a file lock beside it), whole or
not at all. Without ``javac`` (a JRE), when the source does not compile or the folder cannot be written, the
caller gets None and keeps its fallback.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from sysmo.config import settings
from sysmo.log import get_logger

log = get_logger(__name__)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Held by one process at a time (two test workers, two ``sysmo`` commands making the same file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def made_once(path: Path, proof: Path, make: Callable[[], None], failure_event: str) -> bool:
    """Make ``path`` unless ``proof`` (a file it holds, or itself) is there, one process at a time (a file lock
    beside it); whether it is there now. An OSError (e.g. a read-only home) is logged: runs go on without it."""
    try:
        if not proof.is_file():
            with file_lock(path.with_name(f"{path.name}.lock")):
                if not proof.is_file():
                    make()
    except OSError as exc:
        log.warning(failure_event, error=str(exc), path=str(path))
    return proof.is_file()


def javac_beside(java: str) -> Path | None:
    """The ``javac`` of the JDK the configured ``java`` belongs to, or None (a JRE)."""
    javac = Path(os.path.realpath(java)).parent / "javac"
    return javac if javac.is_file() else None


def compiled_jar(name: str, source: Path, classpath: Path, javac: Path, failure_event: str) -> Path | None:
    """``source`` compiled against ``classpath`` (bytecode for Java 11) into ``<jvm_dir>/<name>-<hash>.jar``, made
    once; None when it cannot be made (the reason logged as ``failure_event``)."""
    tag = hashlib.sha256(source.read_bytes() + str(classpath).encode()).hexdigest()[:16]
    path = settings().jvm_dir / f"{name}-{tag}.jar"
    made = made_once(path, path, lambda: _compile(path, javac, source, classpath, failure_event), failure_event)
    return path if made else None


def _compile(path: Path, javac: Path, source: Path, classpath: Path, failure_event: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".sysmo-{path.stem}-", dir=path.parent) as work:  # the jar's file system
        classes = Path(work) / "classes"
        try:
            made = subprocess.run([str(javac), "--release", "11", "-nowarn", "-cp", str(classpath), "-d",
                                   str(classes), str(source)], capture_output=True, text=True, timeout=300,
                                  check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning(failure_event, error=str(exc))
            return
        compiled = sorted(classes.rglob("*.class")) if made.returncode == 0 else []
        if not compiled:
            log.warning(failure_event, error=(made.stderr or made.stdout).strip()[-500:])
            return
        staged = Path(work) / "staged.jar"
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
            for found in compiled:
                jar.write(found, found.relative_to(classes).as_posix())
        os.replace(staged, path)  # whole or not at all
    log.info("java_build.jar_made", path=str(path))
