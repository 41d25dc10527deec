"""Local backend: bubblewrap (else ``unshare -n``) for no network and confined writes, rlimits, cgroups, timeouts.

Isolation, strongest available first:
- bubblewrap: new user/pid/net/ipc namespaces, read-only system, only the work dir writable;
- ``unshare -n``: no network, but the file system is shared (writes limited by running in the work dir);
Memory and pids are bounded through cgroup v1/v2 when writable; the process joins its cgroup before exec,
so grandchildren cannot escape. RLIMIT_AS is never used because it breaks the JVM.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from sysmo.errors import SandboxError
from sysmo.log import get_logger
from sysmo.sandbox.base import Limits, RunResult
from sysmo.sandbox.cgroups import CgroupLimiter

log = get_logger(__name__)

BOX = "/box"  # where the work dir appears inside bubblewrap


def _drain(stream, limit: int, sink: list[bytes], truncated: list[bool]) -> None:
    """Read a pipe to its end, keeping at most ``limit`` bytes."""
    kept = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        if kept < limit:
            take = chunk[: limit - kept]
            sink.append(take)
            kept += len(take)
            if len(take) < len(chunk):
                truncated[0] = True
        else:
            truncated[0] = True
    stream.close()


class LocalSandbox:
    """Runs commands on this machine under the strongest isolation it has."""

    name = "local"

    def __init__(self, mode: str | None = None, allow_network_fallback: bool = False) -> None:
        self.mode = mode or self.detect_mode()
        self.cgroups = CgroupLimiter.detect()
        if self.mode == "none" and not allow_network_fallback:
            raise SandboxError(
                "no way to isolate the network here: install bubblewrap (apt-get install bubblewrap) "
                "or run as root so that `unshare -n` works"
            )

    @staticmethod
    def detect_mode() -> str:
        if shutil.which("bwrap") and _probe(["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]):
            return "bwrap"
        if shutil.which("unshare") and _probe(["unshare", "-n", "true"]):
            return "unshare"
        return "none"

    # ------------------------------------------------------------------ wrapping
    def _wrap(self, argv: list[str], workdir: Path, readonly: list[Path], limits: Limits, env: dict[str, str]) -> tuple[list[str], str]:
        if self.mode == "bwrap":
            cmd = ["bwrap", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                   "--unshare-user-try", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
            if not limits.network:
                cmd.append("--unshare-net")
            cmd += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
            for link in ("lib", "lib64", "bin", "sbin"):
                target = Path("/") / link
                if target.is_symlink():
                    cmd += ["--symlink", os.readlink(target), f"/{link}"]
                elif target.exists():
                    cmd += ["--ro-bind", str(target), f"/{link}"]
            cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
            for path in readonly:
                path = path.resolve()
                if path.exists() and not str(path).startswith(("/usr/", "/etc/")):
                    cmd += ["--ro-bind", str(path), str(path)]
            cmd += ["--bind", str(workdir), BOX, "--chdir", BOX, "--clearenv"]
            for key, value in env.items():
                cmd += ["--setenv", key, value.replace(str(workdir), BOX)]
            cmd += ["--setenv", "HOME", BOX, "--setenv", "TMPDIR", "/tmp", "--"]
            return cmd + [a.replace(str(workdir), BOX) for a in argv], BOX
        if self.mode == "unshare":
            prefix = [] if limits.network else ["unshare", "-n"]
            return prefix + argv, str(workdir)
        return argv, str(workdir)

    # ------------------------------------------------------------------ run
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
        limits = limits or Limits()
        own_dir = workdir is None
        work = Path(tempfile.mkdtemp(prefix="sysmo-box-")) if own_dir else Path(workdir)
        work.mkdir(parents=True, exist_ok=True)
        try:
            for name, content in (files or {}).items():
                target = (work / name).resolve()
                if not str(target).startswith(str(work.resolve())):
                    raise SandboxError(f"file name {name!r} escapes the work dir")
                target.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, bytes):
                    target.write_bytes(content)
                else:
                    target.write_text(content)
            base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
            if "JAVA_HOME" in os.environ:
                base_env["JAVA_HOME"] = os.environ["JAVA_HOME"]
            full_env = {**base_env, **(env or {})}
            wrapped, inner_cwd = self._wrap(argv, work, list(readonly_paths or []), limits, full_env)
            result = self._execute(wrapped, argv, work, limits, full_env, stdin)
            result.isolation = [self.mode] + (["netns"] if (self.mode != "none" and not limits.network) else [])
            if self.cgroups is not None and (limits.memory_mb or limits.pids):
                result.isolation.append(f"cgroup-{self.cgroups.version}")
            for name in collect or []:
                path = work / name
                if path.is_file():
                    result.files_out[name] = path.read_text(errors="replace")
            return result
        finally:
            if own_dir:
                shutil.rmtree(work, ignore_errors=True)

    def _execute(self, wrapped: list[str], argv: list[str], work: Path, limits: Limits,
                 env: dict[str, str], stdin: str | None) -> RunResult:
        group = self.cgroups.create(f"sysmo-{uuid.uuid4().hex[:12]}", limits) if self.cgroups else None

        def preexec() -> None:
            if group is not None:
                group.join(os.getpid())
            if limits.cpu_s:
                resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
            if limits.file_size_mb:
                size = limits.file_size_mb * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                wrapped, cwd=str(work), env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec,
            )
        except FileNotFoundError as exc:
            if group is not None:
                group.remove()
            raise SandboxError(f"cannot start {wrapped[0]!r}: {exc}") from exc
        out: list[bytes] = []
        err: list[bytes] = []
        out_cut, err_cut = [False], [False]
        readers = [
            threading.Thread(target=_drain, args=(proc.stdout, limits.output_limit_bytes, out, out_cut), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, limits.output_limit_bytes, err, err_cut), daemon=True),
        ]
        for reader in readers:
            reader.start()
        if stdin is not None and proc.stdin is not None:
            try:
                proc.stdin.write(stdin.encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass
        timed_out = False
        try:
            proc.wait(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            self._kill_tree(proc, group)
        for reader in readers:
            reader.join(timeout=5)
        duration = time.monotonic() - start
        if group is not None:
            group.remove()
        return RunResult(
            argv=argv,
            returncode=None if timed_out else proc.returncode,
            stdout=b"".join(out).decode(errors="replace"),
            stderr=b"".join(err).decode(errors="replace"),
            duration_s=duration,
            timed_out=timed_out,
            stdout_truncated=out_cut[0],
            stderr_truncated=err_cut[0],
            backend=self.name,
        )

    @staticmethod
    def _kill_tree(proc: subprocess.Popen, group) -> None:
        """Kill the process group (and every process in the cgroup), then reap."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if group is not None:
            group.kill_all()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log.warning("sandbox.unreaped", pid=proc.pid)


def _probe(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
