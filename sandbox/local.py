"""Local backend: bubblewrap (else ``unshare``) for no network and confined writes, rlimits, cgroups, timeouts.

Isolation, strongest available first:
- ``bwrap``: new pid/net/ipc/uts namespaces, no capabilities, read-only /usr and the few /etc entries tools
  read (passwd/group synthesized), a private /tmp, only the work dir writable;
- ``unshare``: the jail of ``sandbox.jail``: new mount/pid/net/ipc/uts namespaces (and a user namespace
  when not root), a new root holding only /usr, the loader links, a few /etc entries, the read-only paths
  and the work dir, a private /tmp and loopback, every capability dropped;
In both the work dir appears at ``/box`` and read-only tool paths under ``/opt/sysmo-tools`` (argv and env
are rewritten: no command line inside names a host folder), and the command runs as nobody: as root, the
host's uid 65534 (a file only root may read stays unreadable), else uid 65534 of a user namespace mapped
to our own user. A work dir made here sits in a ``sysmo-box-*`` folder with an owner file, so the reaper
removes it at the next start if sysmo is killed mid-run.
- ``none``: only when explicitly allowed (no network isolation at all).
Memory and pids are bounded through cgroup v1/v2 when writable; the process joins its cgroup before
exec, so grandchildren cannot escape. RLIMIT_AS is never used because it breaks the JVM.
"""

from __future__ import annotations

import os
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from sysmo.errors import SandboxError
from sysmo.log import get_logger
from sysmo.sandbox.base import (
    BOX,
    NOBODY,
    SYNTHETIC_ETC,
    TOOLS_INSIDE,
    Limits,
    RunResult,
    ToolView,
    collect_files,
    drops_to_nobody,
    hand_to_nobody,
    write_files,
)
from sysmo.sandbox.cgroups import CgroupGroup, CgroupLimiter
from sysmo.sandbox.confine import (
    ETC_FOR_PROGRAMS,
    JAIL_ISOLATION,
    JailSpec,
    Launch,
    etc_entries_for_java,
    jail_launch,
    jail_usable,
    java_view,
    memfd,
    new_root_dir,
    require_confinement,
    set_parent_death_signal,
    system_view,
)
from sysmo.sandbox.reaper import mark_owner, sweep_once
from sysmo.sandbox.seccomp import isolation_tags, program

log = get_logger(__name__)

MODES = ("bwrap", "unshare", "none")
PROC_COVERED = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")

SETPRIV = ["/usr/bin/setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
           "--bounding-set=-all", "--"]


class BwrapLine:
    """A bwrap command line under construction; ``launch()`` hands its options to bwrap through ``--args FD``,
    so that bwrap's own command line (pid 1 inside, readable by the command) shows only the command, whose
    paths are those inside."""

    def __init__(self, args: list[str] | None = None) -> None:
        self.args = list(args or [])
        self._fds: list[int] = []

    def data(self, content: str, dest: str) -> None:
        """A read-only file at ``dest`` holding ``content`` (not a host file)."""
        fd = memfd(content.encode())
        self._fds.append(fd)
        self.args += ["--perms", "0444", "--ro-bind-data", str(fd), dest]

    def launch(self, command: list[str]) -> Launch:
        """The bwrap command line, with the seccomp filter of ``sandbox.seccomp`` loaded before the command."""
        args, fds = list(self.args), list(self._fds)
        filter_program = program()
        if filter_program is not None:
            seccomp = memfd(filter_program)
            fds.append(seccomp)
            args += ["--seccomp", str(seccomp)]
        fd = memfd(b"".join(a.encode() + b"\0" for a in args))
        return Launch(["bwrap", "--args", str(fd), "--", *command], (*fds, fd))


def etc_for_tools() -> list[Path]:
    """The host /etc entries a tool reads (loader cache, time zone, fonts, the JVM's conf), never the rest."""
    found = set(etc_entries_for_java(Path(shutil.which("java") or "/usr/bin/java"))) if shutil.which("java") else set()
    found |= {Path("/etc") / e for e in ETC_FOR_PROGRAMS}
    return sorted(p for p in found if p.exists())


def bwrap_base(*, network: bool, etc: list[Path] | None = None) -> BwrapLine:
    """The part of every bwrap line we use: own namespaces (the network one unless ``network``), a read-only
    /usr, only the ``etc`` entries of the host's /etc (default ``etc_for_tools()``) beside synthesized
    passwd/group/hosts files, a private /tmp, /proc/sys & co. read-only, and an unprivileged user: as root
    the command is started through ``setpriv`` as the host's nobody (prefix it with ``SETPRIV``: bwrap keeps
    only the capabilities to switch user), otherwise as uid 65534 of a user namespace mapped to our user.

    Shared by the sandbox and the long-lived tool servers, so a hardening lands everywhere at once.
    """
    line = BwrapLine(["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                      "--unshare-cgroup-try"])
    if drops_to_nobody():
        line.args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                      "--cap-add", "CAP_SETPCAP"]
    else:
        line.args += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL"]
    if not network:
        line.args.append("--unshare-net")
    # made here so it is 0755: bwrap makes the missing parents of a bind target 0700, closed to nobody
    line.args += ["--ro-bind", "/usr", "/usr", "--dir", "/etc", "--dir", TOOLS_INSIDE]
    for entry in etc if etc is not None else etc_for_tools():
        if Path(entry).exists() and str(entry) not in SYNTHETIC_ETC:
            line.args += ["--ro-bind", str(entry), str(entry)]
    for dest, content in SYNTHETIC_ETC.items():
        line.data(content, dest)
    for link in ("lib", "lib64", "lib32", "bin", "sbin"):
        target = Path("/") / link
        if target.is_symlink():
            line.args += ["--symlink", os.readlink(target), f"/{link}"]
        elif target.exists():
            line.args += ["--ro-bind", str(target), f"/{link}"]
    line.args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]  # nobody writes there
    # bwrap leaves /proc/sys writable for uid 0, and host-wide sysctls (vm.*, kernel.*) check
    # only the uid, not capabilities: cover them read-only (net.* still resolves per netns).
    for entry in PROC_COVERED:
        if Path(entry).exists():
            line.args += ["--ro-bind", entry, entry]
    return line


def as_nobody(argv: list[str]) -> list[str]:
    """``argv`` as bwrap must run it to drop to nobody (see ``bwrap_base``)."""
    return [*SETPRIV, *argv] if drops_to_nobody() else argv


def _drain(stream: IO[bytes], limit: int, sink: list[bytes], truncated: list[bool]) -> None:
    """Read a pipe to its end, keeping at most ``limit`` bytes (the writer is never blocked)."""
    kept = 0
    try:
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
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
    except (OSError, ValueError):
        pass
    finally:
        stream.close()


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write stdin from a thread: a command that never reads it must not block the timeout."""
    try:
        stream.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


def _wait_exit(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until ``proc`` exits or ``timeout_s`` passes; True if it exited.

    A pidfd wakes up the moment the process exits; ``Popen.wait(timeout)`` polls with sleeps of up
    to 50 ms, which is most of the cost of a short sandboxed command.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ready, _, _ = select.select([fd], [], [], max(0.0, timeout_s))
    finally:
        os.close(fd)
    return bool(ready)


def _probe(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class LocalSandbox:
    """Runs commands on this machine under the strongest isolation it has.

    >>> box = LocalSandbox()
    >>> box.run(["sh", "-c", "echo hi > out.txt"], collect=["out.txt"]).files_out
    {'out.txt': 'hi\\n'}
    """

    name = "local"

    def __init__(self, mode: str | None = None, allow_network_fallback: bool = False,
                 use_cgroups: bool = True) -> None:
        if mode is not None and mode not in MODES:
            raise SandboxError(f"unknown sandbox mode {mode!r}; use one of {', '.join(MODES)}")
        self.mode = mode or self.detect_mode()
        sweep_once()  # folders, cgroups and servers a crashed sysmo left behind
        self.cgroups = CgroupLimiter.detect() if use_cgroups else None
        if self.mode == "none" and not allow_network_fallback:
            require_confinement("untrusted commands")
        if self.cgroups is None:
            log.info("sandbox.no_cgroups", hint="memory and pids limits are not enforced; run as root with a "
                     "writable /sys/fs/cgroup, or use the docker backend")
        log.debug("sandbox.local", mode=self.mode, cgroups=self.cgroups.version if self.cgroups else None)

    @staticmethod
    def detect_mode() -> str:
        """``bwrap`` if bubblewrap can build namespaces here, else ``unshare`` if that can, else ``none``."""
        if shutil.which("bwrap") and _probe(["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                                              "true"]):
            return "bwrap"
        if shutil.which("unshare") and jail_usable():
            return "unshare"
        return "none"

    # ------------------------------------------------------------------ wrapping
    def _wrap(self, argv: list[str], work: Path, readonly: list[Path], limits: Limits,
              env: dict[str, str], root: Path | None = None) -> tuple[Launch, dict[str, str]]:
        """The command line that runs ``argv`` isolated, and the environment to start it with."""
        if self.mode == "bwrap":
            return self._wrap_bwrap(argv, work, readonly, limits, env), {"PATH": env["PATH"]}
        if self.mode == "unshare":
            if root is None:
                raise SandboxError("the unshare jail needs an empty folder for its root")
            return self._wrap_jail(argv, work, readonly, limits, env, root), {"PATH": "/usr/bin:/bin"}
        return Launch(argv), env

    @staticmethod
    def _wrap_jail(argv: list[str], work: Path, readonly: list[Path], limits: Limits,
                   env: dict[str, str], root: Path) -> Launch:
        """The unshare jail: a root of /usr, the loader links, a few /etc entries, the read-only paths at
        ``/opt/sysmo-tools`` and the work dir at ``/box``; nothing else of the host (see ``sandbox.jail``)."""
        ro, links = system_view()
        ro += java_view()
        view = ToolView(readonly, work)
        ro += view.binds
        spec = JailSpec(root=str(root), ro=ro, rw=[(str(work), BOX)], symlinks=links, cwd=BOX,
                        env={**view.env(env), "HOME": BOX, "TMPDIR": "/tmp"}, argv=view.argv(argv),
                        own_network=not limits.network, uid=NOBODY if drops_to_nobody() else None,
                        files=SYNTHETIC_ETC)
        return jail_launch(spec)

    @staticmethod
    def _wrap_bwrap(argv: list[str], work: Path, readonly: list[Path], limits: Limits,
                    env: dict[str, str]) -> Launch:
        line = bwrap_base(network=limits.network)
        view = ToolView(readonly, work)
        for host, inner in view.binds:
            line.args += ["--ro-bind", host, inner]
        line.args += ["--bind", str(work), BOX, "--chdir", BOX, "--clearenv"]
        for key, value in view.env(env).items():
            line.args += ["--setenv", key, value]
        line.args += ["--setenv", "HOME", BOX, "--setenv", "TMPDIR", "/tmp"]
        return line.launch(as_nobody(view.argv(argv)))

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
        if not argv:
            raise SandboxError("nothing to run: argv is empty")
        limits = limits or Limits()
        if Path(argv[0]).name == "java" and not any(a.startswith("-Xmx") for a in argv):
            # Inside the sandbox the JVM cannot see its cgroup and sizes its heap from host RAM.
            log.warning("sandbox.java_without_xmx", hint="pass -Xmx below limits.memory_mb")
        own_dir = workdir is None
        jail_root: Path | None = None
        outer = Path(tempfile.mkdtemp(prefix="sysmo-box-")) if own_dir else None
        if outer is not None:
            # the owner file sits beside the work dir, out of the command's reach: a later sysmo deletes the
            # folder if this process is killed before it does (sandbox.reaper)
            mark_owner(outer)
        work = outer / "box" if outer is not None else Path(workdir)
        work.mkdir(parents=True, exist_ok=True)
        work = work.resolve()
        try:
            write_files(work, files)
            if self.mode != "none":
                hand_to_nobody(work)
            base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
            if "JAVA_HOME" in os.environ:
                base_env["JAVA_HOME"] = os.environ["JAVA_HOME"]
            full_env = {**base_env, **(env or {})}
            if self.mode == "unshare":
                jail_root = new_root_dir()
                wrapped, popen_env = self._wrap(argv, work, list(readonly_paths or []), limits, full_env,
                                                root=jail_root)
            else:
                wrapped, popen_env = self._wrap(argv, work, list(readonly_paths or []), limits, full_env)
            result = self._execute(wrapped, argv, work, limits, popen_env, stdin)
            if self.mode == "unshare":
                tags = [t for t in JAIL_ISOLATION if not (limits.network and t == "netns")]
            else:
                tags = [self.mode] + (["netns"] if (self.mode != "none" and not limits.network) else [])
                tags += isolation_tags() if self.mode == "bwrap" else []
            result.isolation = tags + result.isolation
            result.files_out, result.files_truncated = collect_files(work, collect, limits.output_limit_bytes)
            return result
        finally:
            if jail_root is not None:
                shutil.rmtree(jail_root, ignore_errors=True)
            if outer is not None:
                shutil.rmtree(outer, ignore_errors=True)

    def _execute(self, wrapped: Launch, argv: list[str], work: Path, limits: Limits,
                 env: dict[str, str], stdin: str | None) -> RunResult:
        group: CgroupGroup | None = None
        if self.cgroups is not None and (limits.memory_mb or limits.pids):
            group = self.cgroups.create(CgroupLimiter.unique_name(), limits)
        cpu = (limits.cpu_s, limits.cpu_s + 5) if limits.cpu_s else None
        fsize = (limits.file_size_mb * 1024 * 1024,) * 2 if limits.file_size_mb else None

        def preexec() -> None:
            set_parent_death_signal()  # the command dies with sysmo, even on SIGKILL
            # Between fork and exec: join the cgroup first, so that everything the command starts is in it.
            if group is not None:
                group.join(os.getpid())
            if cpu is not None:
                resource.setrlimit(resource.RLIMIT_CPU, cpu)
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, fsize)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                wrapped.argv, cwd=str(work), env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec,
                pass_fds=wrapped.pass_fds,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            if group is not None:
                group.remove()
            raise SandboxError(f"cannot start {wrapped.argv[0]!r} in the sandbox: {exc}") from exc
        finally:
            wrapped.close()
        out: list[bytes] = []
        err: list[bytes] = []
        out_cut, err_cut = [False], [False]
        threads = [
            threading.Thread(target=_drain, args=(proc.stdout, limits.output_limit_bytes, out, out_cut), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, limits.output_limit_bytes, err, err_cut), daemon=True),
        ]
        if stdin is not None and proc.stdin is not None:
            threads.append(threading.Thread(target=_feed, args=(proc.stdin, stdin.encode()), daemon=True))
        for thread in threads:
            thread.start()
        try:
            timed_out = not _wait_exit(proc, limits.timeout_s)
        finally:
            self._kill_tree(proc, group)
        for thread in threads:
            thread.join(timeout=5)
        duration = time.monotonic() - start
        usage = group.usage() if group is not None else None
        if group is not None:
            group.remove()
        if timed_out:
            log.info("sandbox.timeout", argv0=argv[0], timeout_s=limits.timeout_s)
        result = RunResult(
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
        if group is not None:
            result.isolation = [f"cgroup-{c}" for c in group.controllers]
        if usage is not None:
            result.oom_killed = usage.oom_killed
            result.memory_peak_mb = usage.memory_peak_mb
        return result

    @staticmethod
    def _kill_tree(proc: subprocess.Popen, group: CgroupGroup | None) -> None:
        """Kill the process group (and every process in the cgroup), then reap.

        Under bwrap/unshare the wrapper is the namespace's parent: killing it tears down the pid
        namespace, which kills every process inside, even those that left the process group.
        """
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

