"""The sandbox contract: run a command on given files under limits, get a bounded ``RunResult``."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from sysmo.errors import SandboxError

BOX = "/box"  # where the work dir appears inside every sandbox
TOOLS_INSIDE = "/opt/sysmo-tools"  # where read-only tool paths appear (a name that says nothing of the host)
NOBODY = 65534  # the uid and gid commands run as: no host file is theirs, no capability is left
# The only users and groups a command sees (the host's /etc/passwd names its accounts and homes);
# also what the JVM and fontconfig ask the name service for
SYNTHETIC_ETC = {
    "/etc/passwd": f"root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
                   f"nobody:x:{NOBODY}:{NOBODY}:nobody:{BOX}:/usr/sbin/nologin\n",
    "/etc/group": f"root:x:0:\nnogroup:x:{NOBODY}:\n",
    "/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    "/etc/hosts": "127.0.0.1 localhost\n::1 localhost\n",
}


class Limits(BaseModel):
    """Resource bounds for one command. ``None`` means: the backend's configured default."""

    timeout_s: float = 120.0  # wall clock; the whole process tree is killed when it passes
    cpu_s: int | None = 600  # RLIMIT_CPU
    memory_mb: int | None = 4096  # cgroup memory limit (RLIMIT_AS breaks the JVM; bound Java with -Xmx too)
    file_size_mb: int | None = 256  # RLIMIT_FSIZE
    pids: int | None = 512  # cgroup pids limit
    output_limit_bytes: int = 2_000_000  # per stream; the rest is drained and dropped
    network: bool = False  # True only for trusted long-lived servers bound to 127.0.0.1


class RunResult(BaseModel):
    """What happened to one sandboxed command."""

    argv: list[str]
    returncode: int | None  # None when killed by the timeout before it exited
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    backend: str = "local"
    isolation: list[str] = Field(default_factory=list)  # e.g. ["bwrap", "netns", "cgroup-memory"]
    files_out: dict[str, str] = Field(default_factory=dict)  # files read back from the work dir on request
    files_truncated: list[str] = Field(default_factory=list)  # collected files cut at output_limit_bytes
    oom_killed: bool = False  # the memory limit killed a process of the command
    memory_peak_mb: float | None = None  # peak memory of the command's cgroup (or container), when known
    # served by a cache of deterministic runs (tools.tla.run_cache) instead of run again: duration_s is then the
    # time this caller waited for it, the output that of the run stored
    cached: bool = False

    @property
    def output(self) -> str:
        return self.stdout + ("\n" + self.stderr if self.stderr else "")


@runtime_checkable
class Sandbox(Protocol):
    """Anything that can run a command under limits on a private copy of some files."""

    name: str

    def run(
        self,
        argv: list[str],
        *,
        files: dict[str, str | bytes] | None = None,
        workdir: Path | None = None,
        readonly_paths: list[Path] | None = None,
        limits: Limits | None = None,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        collect: list[str] | None = None,
    ) -> RunResult:
        """Run ``argv`` with ``files`` written into a fresh work dir (or ``workdir`` if given).

        ``readonly_paths`` (jars, library dirs) are visible read-only at the same path.
        ``collect`` names work-dir files to read back into ``RunResult.files_out``.
        """
        ...


def inner_tool_path(path: Path) -> str:
    """Where the read-only host path ``path`` appears inside a sandbox: same name, a neutral folder."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:10]
    return f"{TOOLS_INSIDE}/{digest}-{path.name}"


class ToolView:
    """The read-only paths of one run as the sandbox shows them, and the rewriting of argv and env to match.

    A path under ``/usr`` stays where it is (the system is visible anyway); any other path (a jar under the
    host's home, our TLA+ library in the checkout) appears at ``inner_tool_path``, and the work dir at
    ``/box``, so that no command line or environment inside names a host folder.
    """

    def __init__(self, readonly: list[Path], work: Path, system: tuple[str, ...] = ("/usr",)) -> None:
        self.work = work
        self.binds: list[tuple[str, str]] = []  # (host path, path inside) to bind read-only
        self._spellings: list[tuple[str, str]] = []
        for given in readonly:
            path = given.resolve()
            if not path.exists():
                log_missing(path)
                continue
            if path.is_relative_to(work):
                continue
            inner = str(path) if any(path.is_relative_to(s) for s in system) else inner_tool_path(path)
            if inner != str(path):
                self.binds.append((str(path), inner))
            for spelling in {str(given), str(path)}:
                self._spellings.append((spelling, inner))
        self._spellings.sort(key=lambda pair: len(pair[0]), reverse=True)  # a nested path before its parent

    def rewrite(self, value: str) -> str:
        """``value`` with every host spelling of a read-only path or of the work dir replaced by its path inside."""
        for host, inner in self._spellings:
            value = to_inner_path(value, Path(host), inner)
        return to_inner_path(value, self.work, BOX)

    def argv(self, argv: list[str]) -> list[str]:
        return [self.rewrite(a) for a in argv]

    def env(self, env: dict[str, str]) -> dict[str, str]:
        return {k: self.rewrite(v) for k, v in env.items()}


def log_missing(path: Path) -> None:
    from sysmo.log import get_logger

    get_logger(__name__).warning("sandbox.readonly_missing", path=str(path))


def drops_to_nobody() -> bool:
    """True when sysmo runs as root: commands then run as the host's nobody (not root mapped to a uid), started
    through util-linux ``setpriv`` under bubblewrap."""
    return os.geteuid() == 0 and os.access("/usr/bin/setpriv", os.X_OK)


def hand_to_nobody(folder: Path) -> None:
    """Give ``folder`` and what is in it to nobody, so a command running as nobody can write its outputs there
    (TLC's ``states/``, PlantUML's ``out/``). Only as root; otherwise the command runs as our own user."""
    if not drops_to_nobody():
        return
    os.chown(folder, NOBODY, NOBODY)
    # bubblewrap enters it before it becomes nobody, with no capability left: it needs the "other" search bit
    os.chmod(folder, stat.S_IMODE(os.stat(folder).st_mode) | 0o111)
    for dirpath, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            os.chown(os.path.join(dirpath, name), NOBODY, NOBODY, follow_symlinks=False)


def write_files(work: Path, files: dict[str, str | bytes] | None) -> None:
    """Write ``files`` (relative names) into ``work``; a name that escapes it raises SandboxError.

    Resolving the target also refuses a symlink a previous sandboxed run left in a reused work dir.
    """
    root = work.resolve()
    for name, content in (files or {}).items():
        target = (root / name).resolve()
        if target == root or not target.is_relative_to(root):
            raise SandboxError(f"file name {name!r} escapes the work dir; use a relative name inside it")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)


def relative_name(name: str, work: Path, inner_root: str = BOX) -> str | None:
    """``name`` as a path relative to the work dir, whether given relative, as ``/box/...`` or as the host path."""
    path = PurePosixPath(name)
    if path.is_absolute():
        for root in (PurePosixPath(inner_root), PurePosixPath(str(work)), PurePosixPath(str(work.resolve()))):
            if path == root or path.is_relative_to(root):
                path = path.relative_to(root)
                break
        else:
            return None
    if ".." in path.parts or not path.parts:
        return None
    return path.as_posix()


def collect_files(work: Path, names: list[str] | None, limit_bytes: int,
                  inner_root: str = BOX) -> tuple[dict[str, str], list[str]]:
    """Read regular files named in ``names`` (relative, ``/box/...``, host paths or globs) out of ``work``.

    The work dir was written by the untrusted command: symlinks are never followed (a link to
    ``/etc/shadow`` must not be read back), FIFOs and devices are skipped, and each file is read
    up to ``limit_bytes``. Returns (files by relative name, names cut at the bound).
    """
    root = work.resolve()
    found: dict[str, str] = {}
    cut: list[str] = []
    for name in names or []:
        rel = relative_name(name, root, inner_root) or relative_name(name, work, inner_root)
        if rel is None:
            continue
        if any(ch in rel for ch in "*?["):
            candidates = sorted(_walk_files(root, limit=10_000))
            matches = [c for c in candidates if fnmatch.fnmatchcase(c, rel)]
        else:
            matches = [rel]
        for match in matches:
            text, truncated = _read_regular(root, match, limit_bytes)
            if text is None:
                continue
            found[match] = text
            if truncated:
                cut.append(match)
    return found, cut


def _walk_files(root: Path, limit: int) -> list[str]:
    """Relative names of the regular files under ``root`` without following symlinked directories."""
    names: list[str] = []
    for dirpath, _dirs, filenames in os.walk(root, followlinks=False):
        for filename in filenames:
            names.append(Path(dirpath, filename).relative_to(root).as_posix())
            if len(names) >= limit:
                return names
    return names


def _read_regular(root: Path, rel: str, limit_bytes: int) -> tuple[str | None, bool]:
    """Open ``root/rel`` refusing symlinks at every component; None if it is not a regular file."""
    parts = rel.split("/")
    flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(root, flags_dir)
    except OSError:
        return None, False
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, flags_dir, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        os.close(fd)
        return None, False
    os.close(fd)
    try:
        if not stat.S_ISREG(os.fstat(file_fd).st_mode):
            return None, False
        with os.fdopen(file_fd, "rb", closefd=False) as handle:
            data = handle.read(limit_bytes + 1)
    finally:
        os.close(file_fd)
    return data[:limit_bytes].decode(errors="replace"), len(data) > limit_bytes


def to_inner_path(value: str, work: Path, inner_root: str = BOX) -> str:
    """Rewrite host work-dir paths inside an argument (or env value) to their path inside the sandbox."""
    root = str(work)
    if root not in value:
        return value
    # Only whole path prefixes: /tmp/sysmo-box-ab must not turn /tmp/sysmo-box-abc/x into /boxc/x.
    out: list[str] = []
    i = 0
    while True:
        j = value.find(root, i)
        if j < 0:
            out.append(value[i:])
            return "".join(out)
        end = j + len(root)
        if end == len(value) or value[end] in "/:;= ,\"'":
            out.append(value[i:j] + inner_root)
        else:
            out.append(value[i:end])
        i = end
