"""The OpenSysML kernel as a supervised long-lived server: confined, health-checked, restarted, one cell at a time.

The kernel is the static Go binary of PyPI ``jupyter-opensysml-kernel`` spoken to over Jupyter's ZMQ
protocol (``jupyter_client``) on Unix sockets (transport ``ipc``) in a writable ``sockets`` folder of its
scratch root, so it needs no network at all: under bubblewrap and in the ``unshare`` jail
(``sandbox.confine``) it gets its own network namespace with nothing in it, its own pid/ipc/uts (and mount)
namespaces, a read-only system, a tmpfs ``/tmp``, the scratch root that it can read (model folders we write)
with one writable sub-folder for ``%save`` exports, no capabilities, and runs as nobody. With no confinement possible it is refused unless ``--allow-unconfined``. A cgroup
bounds memory and processes where writable; the parent-death signal ends it with sysmo.

>>> run = shared_kernel().load({"m.sysml": "package P { part def A; }"}, exports=("model.json",))
>>> run.reply.stdout, sorted(run.exports)
('✓ package P\\n', ['model.json'])
"""

from __future__ import annotations

import hmac
import os
import resource
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from sysmo.contracts.check import Diagnostic
from sysmo.errors import SysmoError, ToolCrashError
from sysmo.log import get_logger
from sysmo.sandbox.base import Limits, hand_to_nobody
from sysmo.sandbox.cgroups import CgroupGroup, CgroupLimiter
from sysmo.sandbox.confine import (
    JAIL_ISOLATION,
    JailSpec,
    confinement_level,
    jail_launch,
    require_confinement,
    set_parent_death_signal,
    system_view,
)
from sysmo.sandbox.confine import Launch
from sysmo.sandbox.local import as_nobody, bwrap_base
from sysmo.sandbox.reaper import mark_owner, record_server
from sysmo.sandbox.seccomp import isolation_tags
from sysmo.sandbox.server import ToolServer
from sysmo.tools.install import opensysml_kernel
# the batch limit lives apart from the kernel: `sysmo reproduce` sets it without importing the SysML tools
from sysmo.tools.opensysml_limits import BATCH_REQUEST_TIMEOUT_S, TIMEOUT_ENV, use_batch_timeout  # noqa: F401

if TYPE_CHECKING:  # jupyter_client and zmq are imported when a kernel starts (a second of start-up otherwise)
    from jupyter_client import BlockingKernelClient

log = get_logger(__name__)

SYNTAX_ERROR = ": error[syntax]: "  # a load diagnostic that means the model does not parse

DEFAULT_REQUEST_TIMEOUT_S = 60.0
KERNEL_MEMORY_MB = 3072  # the whole OMG examples folder at once stays well below this
KERNEL_PIDS = 256
KERNEL_FILE_SIZE_MB = 512
CLEARED = "session cleared\n"  # what %clear prints before the %load output
BINARY_INSIDE = "/opt/sysmo-tools/sysml-jupyter-kernel"  # the binary lives under the host's home: not its path
HEALTH_CELL = "1+1"  # evaluates to 2 without touching the session model
# The kernel is a Go program: collecting garbage at 4x the live heap instead of 2x (GOGC=400) cuts its CPU
# time by about a quarter on DesignBench's reference models (151 loads with exports: 18.5 s -> 14.3 s of
# kernel CPU, resident memory 210 -> 460 MB); the soft limit makes it collect harder before the cgroup's bound.
KERNEL_GO_ENV = {"GOGC": "400", "GOMEMLIMIT": f"{KERNEL_MEMORY_MB * 2 // 3}MiB"}


class KernelReply(BaseModel):
    """What the kernel answered to one cell (or why it did not)."""

    status: str  # ok | error (a command failed) | timeout | crashed
    stdout: str = ""
    stderr: str = ""
    results: list[str] = Field(default_factory=list)  # text/plain of execute_result / display_data
    error: str | None = None  # ename: evalue of an error reply, or what went wrong
    duration_s: float = 0.0


class KernelRun(BaseModel):
    """A ``%clear`` + ``%load`` of files in a fresh folder, with the text of any ``%save`` exports."""

    reply: KernelReply
    folder: str  # where the files were while the kernel read them (diagnostics name this path)
    exports: dict[str, str] = Field(default_factory=dict)  # export name -> file text
    export_replies: list[KernelReply] = Field(default_factory=list)
    restarts: int = 0  # kernel restarts this run caused or needed
    diagnostics: list[Diagnostic] | None = None  # the load's, once parsed (``validate.run_files``)


def safe_relative_path(name: str) -> PurePosixPath:
    """A model file name as a relative path that stays inside its folder (no absolute, no ``..``)."""
    path = PurePosixPath(name.replace("\\", "/"))
    parts = [p for p in path.parts if p not in ("", ".", "/")]
    if not parts or any(p == ".." for p in parts) or path.is_absolute():
        raise SysmoError(f"model file name {name!r} must be a relative path inside the model folder")
    return PurePosixPath(*parts)


def _remove_folder(folder: Path, written: list[Path]) -> None:
    """Remove a model folder holding just the files ``written`` (one or two files, on a tmpfs: unlink and rmdir
    cost a fraction of ``shutil.rmtree``'s walk); anything else in it (sub-folders, a file the kernel left) falls
    back to the walk."""
    try:
        for path in written:
            path.unlink()
        folder.rmdir()
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)


def received(session: Any, socket: Any) -> dict[str, Any] | None:
    """The next message waiting on ``socket`` (None when there is none), read as ``Session.deserialize`` reads it,
    signature and replay checks included, but without turning every ISO date of its headers into a ``datetime``
    (nothing here reads them): that date parsing was 40% of the client's CPU per validation (a third of a
    millisecond of the warm 10.5 ms)."""
    import zmq
    from jupyter_client.adapter import adapt

    try:
        frames = socket.recv_multipart(zmq.NOBLOCK, copy=True)
    except zmq.Again:
        return None
    _, parts = session.feed_identities(frames, copy=True)
    if len(parts) < 5:
        raise TypeError(f"malformed message from the kernel: {len(parts)} parts, at least 5 expected")
    if session.auth is not None:
        signature = parts[0]
        if not signature:
            raise ValueError("Unsigned Message")
        if signature in session.digest_history:
            raise ValueError(f"Duplicate Signature: {signature!r}")
        session._add_digest(signature)
        if not hmac.compare_digest(signature, session.sign(parts[1:5])):
            raise ValueError(f"Invalid Signature: {signature!r}")
    header = session.unpack(parts[1])
    message = {"header": header, "msg_id": header["msg_id"], "msg_type": header["msg_type"],
               "parent_header": session.unpack(parts[2]), "metadata": session.unpack(parts[3]),
               "content": session.unpack(parts[4]), "buffers": [memoryview(b) for b in parts[5:]]}
    return adapt(message)


class OpenSysMLKernel(ToolServer):
    """One OpenSysML kernel process. Thread-safe: requests are serialised by the server lock."""

    name = "opensysml-kernel"
    start_timeout_s = 30.0

    def __init__(self, binary: Path | None = None, request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
                 confine: bool | None = None) -> None:
        super().__init__()
        self.binary = Path(binary or opensysml_kernel()).resolve()
        self.request_timeout_s = request_timeout_s
        self.confine = True if confine is None else confine
        self.level = "none"  # bwrap | unshare | none, chosen at each start
        self.isolation: list[str] = []
        self.scratch: Path | None = None
        self.client: BlockingKernelClient | None = None
        self._cgroup: CgroupGroup | None = None
        self._key = b""

    # ------------------------------------------------------------------ process
    def _command(self, connection_file: Path) -> Launch:
        kernel = [str(self.binary), "-connection-file", str(connection_file)]
        assert self.scratch is not None
        if self.level == "unshare":
            # own network namespace: the client reaches the ZMQ sockets as Unix sockets (transport ipc)
            # in the scratch root, which the jail shows at its host path
            ro, links = system_view()
            ro += [(str(self.binary), BINARY_INSIDE), (str(self.scratch), str(self.scratch))]
            rw = [(str(self.scratch / "exports"), str(self.scratch / "exports")),
                  (str(self.scratch / "sockets"), str(self.scratch / "sockets"))]
            spec = JailSpec(root=str(self.scratch / "root"), ro=ro, rw=rw, symlinks=links,
                            cwd=str(self.scratch / "exports"),
                            env={"HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin",
                                 **KERNEL_GO_ENV},
                            argv=[BINARY_INSIDE, "-connection-file", str(connection_file)])
            return jail_launch(spec)
        if self.level != "bwrap":
            return Launch(kernel)
        line = bwrap_base(network=False)  # ZMQ over the Unix sockets of the scratch root: no network at all
        line.args += ["--ro-bind", str(self.binary), BINARY_INSIDE,  # not at its host path: no host home inside
                      "--ro-bind", str(self.scratch), str(self.scratch)]
        for sub in ("exports", "sockets"):
            line.args += ["--bind", str(self.scratch / sub), str(self.scratch / sub)]
        # not the exports folder: bwrap changes into it before it drops to nobody, with no capability left to
        # enter a folder of nobody's (the kernel's %save targets are absolute paths)
        line.args += ["--chdir", "/tmp", "--clearenv",
                      "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8"]
        line.args += [arg for name, value in KERNEL_GO_ENV.items() for arg in ("--setenv", name, value)]
        return line.launch(as_nobody([BINARY_INSIDE, *kernel[1:]]))

    def _start(self) -> subprocess.Popen:
        from jupyter_client import BlockingKernelClient
        from jupyter_client.connect import write_connection_file

        self.level = confinement_level() if self.confine else "none"
        if self.level == "none" and self.confine:
            require_confinement("the OpenSysML kernel")
        from sysmo.sandbox.scratch import memory_scratch_root  # each load makes and deletes a folder here

        self.scratch = Path(tempfile.mkdtemp(prefix="sysmo-opensysml-", dir=memory_scratch_root()))
        mark_owner(self.scratch)
        for sub in ("models", "exports", "sockets", "root"):
            (self.scratch / sub).mkdir()
        self._key = secrets.token_hex(16).encode()  # signed messages: other local users cannot inject cells
        connection_file = self.scratch / "connection.json"
        if self.level in ("unshare", "bwrap"):
            write_connection_file(str(connection_file), ip=str(self.scratch / "sockets" / "k"), key=self._key,
                                  transport="ipc")
            # the kernel runs as nobody: it must read its connection file and make its sockets and exports
            hand_to_nobody(self.scratch)
        else:
            write_connection_file(str(connection_file), ip="127.0.0.1", key=self._key, transport="tcp")
        limiter = CgroupLimiter.detect()
        self._cgroup = limiter.create(CgroupLimiter.unique_name("opensysml"),
                                      Limits(memory_mb=KERNEL_MEMORY_MB, pids=KERNEL_PIDS)) if limiter else None
        group = self._cgroup

        def preexec() -> None:
            set_parent_death_signal()  # the kernel dies with sysmo, even on SIGKILL
            if group is not None:
                group.join(os.getpid())  # before exec, so every thread and child is bounded
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            size = KERNEL_FILE_SIZE_MB * 1024 * 1024  # bounds what a %save can write
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

        launch = self._command(connection_file)
        levels = {"bwrap": ["bwrap", *isolation_tags()], "unshare": list(JAIL_ISOLATION), "none": ["none"]}
        self.isolation = levels[self.level] + ([f"cgroup-{limiter.version}"] if group else [])
        if self.level == "none":
            log.warning("opensysml.unconfined", hint="apt-get install bubblewrap to confine the kernel")
        try:
            proc = subprocess.Popen(launch.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, cwd=str(self.scratch / "exports"), start_new_session=True,
                                    preexec_fn=preexec, pass_fds=launch.pass_fds,
                                    env={"PATH": "/usr/bin:/bin", "HOME": str(self.scratch), "LANG": "C.UTF-8",
                                         **KERNEL_GO_ENV})
        finally:
            launch.close()
        record_server(self.scratch, proc.pid, group)
        client = BlockingKernelClient(connection_file=str(connection_file))
        client.load_connection_file()
        client.start_channels()
        self.client = client
        log.info("opensysml.launch", pid=proc.pid, isolation=self.isolation, scratch=str(self.scratch))
        return proc

    def _healthy(self) -> bool:
        # short: iopub drops what the kernel publishes before our subscription is live (the ZMQ
        # slow-joiner effect), so an early probe loses its output; the next probe then succeeds
        reply = self._execute(HEALTH_CELL, timeout_s=0.5)
        return reply.status == "ok" and any("= 2" in r for r in reply.results)

    def _stop(self) -> None:
        if self.client is not None:
            try:
                self.client.stop_channels()
            except Exception:  # noqa: BLE001 - tearing down a client of a dead kernel
                pass
            self.client = None
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the kernel has no state worth a graceful exit
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log.warning("opensysml.unreaped", pid=self.proc.pid)
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def kernel_pids(self) -> list[int]:
        """The launched process and its descendants (the kernel itself sits below bwrap)."""
        return self.process_tree()

    # ------------------------------------------------------------------ requests
    def _execute(self, code: str, timeout_s: float) -> KernelReply:
        """Send one cell and gather its output; ``timeout``/``crashed`` instead of waiting forever."""
        import zmq  # a client exists, so jupyter_client (and zmq with it) is imported already

        client = self.client
        if client is None:
            return KernelReply(status="crashed", error="kernel not started")
        start = time.monotonic()
        deadline = start + timeout_s
        msg_id = client.execute(code, silent=False, store_history=False, allow_stdin=False, stop_on_error=False)
        stdout: list[str] = []
        stderr: list[str] = []
        results: list[str] = []
        error: str | None = None
        replied = idle = False
        status = "ok"
        channels = (("iopub", client.iopub_channel), ("shell", client.shell_channel))
        poller = zmq.Poller()
        for _, channel in channels:
            poller.register(channel.socket, zmq.POLLIN)
        while not (replied and idle):
            if time.monotonic() > deadline:
                return KernelReply(status="timeout", stdout="".join(stdout), stderr="".join(stderr), results=results,
                                   error=f"no answer within {timeout_s:g} s", duration_s=time.monotonic() - start)
            if self.proc is not None and self.proc.poll() is not None:
                return KernelReply(status="crashed", stdout="".join(stdout), stderr="".join(stderr), results=results,
                                   error=f"kernel exited with status {self.proc.returncode}",
                                   duration_s=time.monotonic() - start)
            # wake up at least every 0.1 s to notice a dead kernel or the deadline
            ready = dict(poller.poll(timeout=max(1, min(100, int((deadline - time.monotonic()) * 1000)))))
            for channel_name, channel in channels:
                if channel.socket not in ready:
                    continue
                msg = received(client.session, channel.socket)
                if msg is None:
                    continue
                channel_is_shell = channel_name == "shell"
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue  # a late answer to an earlier (timed-out or health) request
                kind, content = msg["msg_type"], msg["content"]
                if channel_is_shell:
                    replied = True
                    if content.get("status") != "ok":
                        status = "error"
                        error = error or f"{content.get('ename', 'error')}: {content.get('evalue', '')}"
                elif kind == "stream":
                    (stdout if content.get("name") == "stdout" else stderr).append(content.get("text", ""))
                elif kind in ("execute_result", "display_data"):
                    results.append(content.get("data", {}).get("text/plain", ""))
                elif kind == "error":
                    error = f"{content.get('ename', 'error')}: {content.get('evalue', '')}"
                elif kind == "status" and content.get("execution_state") == "idle":
                    idle = True
        return KernelReply(status=status, stdout="".join(stdout), stderr="".join(stderr), results=results,
                           error=error, duration_s=time.monotonic() - start)

    def _fail_request(self, reply: KernelReply, code: str) -> None:
        """A request that timed out or crashed leaves the kernel unusable: kill it now, start afresh next time."""
        log.warning("opensysml.request_failed", status=reply.status, error=reply.error, cell=code[:200])
        self.restarts += 1
        self.stop()

    def execute(self, code: str, timeout_s: float | None = None) -> KernelReply:
        """Run one cell on a healthy kernel. A timeout or crash restarts the kernel and is returned as such."""
        with self._lock:
            self.ensure()
            reply = self._execute(code, timeout_s or self.request_timeout_s)
            if reply.status in ("timeout", "crashed"):
                self._fail_request(reply, code)
            return reply

    def load(self, files: dict[str, str], *, exports: tuple[str, ...] = (), timeout_s: float | None = None,
             retry_after_crash: bool = True, exports_after_syntax_errors: bool = False,
             more_exports: Callable[[KernelRun], tuple[str, ...]] | None = None) -> KernelRun:
        """``%clear`` then ``%load`` ``files`` from a fresh folder of their own; then ``%save`` each export name.

        ``%load`` reads every ``.sysml`` file of a folder, so each load gets an empty folder. A kernel that
        crashes is restarted and the load tried once more (the crash may not be the model's doing);
        a timeout is not retried: the model may be what hangs the kernel. After a load that reported a syntax
        error (``error[syntax]``) the exports are not asked for (the kernel refuses them: a model that does not
        parse has no element tree), which saves two of the three requests on a model that does not parse,
        unless ``exports_after_syntax_errors``. ``more_exports``, given the run so far (the load's reply and the
        exports' texts), names further exports of the same loaded model (asked for before any other request
        reaches the kernel).
        """
        timeout_s = timeout_s or self.request_timeout_s
        attempts = 2 if retry_after_crash else 1
        restarts = 0
        with self._lock:
            for attempt in range(attempts):
                self.ensure()
                assert self.scratch is not None
                folder = self.scratch / "models" / uuid.uuid4().hex
                out = self.scratch / "exports" / folder.name
                written: list[Path] = []
                try:
                    for name, text in files.items():
                        target = folder / safe_relative_path(name)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_text(text, encoding="utf-8", errors="replace")  # lone surrogates: "?"
                        written.append(target)
                    folder.mkdir(parents=True, exist_ok=True)
                    code = f"%clear\n%load {folder}"
                    reply = self._execute(code, timeout_s)
                    reply.stdout = reply.stdout.removeprefix(CLEARED)
                    run = KernelRun(reply=reply, folder=str(folder))
                    if reply.status in ("timeout", "crashed"):
                        self._fail_request(reply, code)
                        restarts += 1
                        run.restarts = restarts
                        if reply.status == "crashed" and attempt + 1 < attempts:
                            continue
                        return run
                    if not exports_after_syntax_errors and SYNTAX_ERROR in reply.stdout:
                        exports = ()
                    failed = self._save(run, exports, out, timeout_s)
                    if not failed and exports and more_exports is not None:
                        failed = self._save(run, more_exports(run), out, timeout_s)
                    run.restarts = restarts + failed
                    return run
                finally:
                    _remove_folder(folder, written)
                    if out.exists():  # made only when exports were asked for
                        shutil.rmtree(out, ignore_errors=True)
        raise ToolCrashError("unreachable: the OpenSysML load loop ended without a result")  # pragma: no cover

    def _save(self, run: KernelRun, exports: tuple[str, ...], out: Path, timeout_s: float) -> bool:
        """``%save`` each export of the loaded model into ``run.exports``; True if a request failed (restarted)."""
        if exports:  # made only when asked for: most models that do not parse get no export (a directory less)
            out.mkdir(exist_ok=True)
            hand_to_nobody(out)  # where the kernel, running as nobody, writes its %save exports
        for name in exports:
            target = out / PurePosixPath(name).name
            saved = self._execute(f"%save {target}", timeout_s)
            run.export_replies.append(saved)
            if saved.status in ("timeout", "crashed"):
                self._fail_request(saved, f"%save {target}")
                return True
            if target.is_file():
                run.exports[name] = target.read_text(encoding="utf-8", errors="replace")
        return False

    def version(self) -> str:
        return self.version_of(self.binary)

    @staticmethod
    def version_of(binary: Path) -> str:
        """``v0.11.0`` from ``sysml-jupyter-kernel -version`` (no kernel needed)."""
        proc = subprocess.run([str(binary), "-version"], capture_output=True, text=True, timeout=30)
        first = (proc.stdout or proc.stderr).strip().splitlines()
        return first[0].rsplit(" ", 1)[-1] if first else "unknown"


_shared: OpenSysMLKernel | None = None
_shared_lock = threading.Lock()


def shared_kernel() -> OpenSysMLKernel:
    """The process-wide kernel (started on first use, stopped at exit); ``$SYSMO_OPENSYSML_TIMEOUT_S`` sets its
    time limit per request (default 60 s): a model that hangs the parser costs the whole limit and a restart,
    so batch scoring of many published predictions may want less."""
    with _shared_lock:
        return _shared_unlocked()


def _shared_unlocked() -> OpenSysMLKernel:
    global _shared
    if _shared is None:
        limit = os.environ.get(TIMEOUT_ENV)
        _shared = OpenSysMLKernel(request_timeout_s=float(limit) if limit else DEFAULT_REQUEST_TIMEOUT_S)
    return _shared


KERNELS_ENV = "SYSMO_OPENSYSML_KERNELS"  # how many kernels one process's checks may spread over (default 1)
_pool: list[OpenSysMLKernel] = []
_leases: dict[int, int] = {}  # id(kernel) -> checks running on it


def use_kernels(n: int) -> int:
    """Let this process's checks spread over ``n`` kernels unless ``$SYSMO_OPENSYSML_KERNELS`` already says how
    many (a run whose tool slots check in parallel: each slot a kernel, never more kernels than slots)."""
    os.environ.setdefault(KERNELS_ENV, str(max(1, n)))
    return int(os.environ[KERNELS_ENV])


@contextmanager
def leased_kernel() -> Iterator[OpenSysMLKernel]:
    """The least busy of the process's kernels for one check: the shared kernel, and up to
    ``$SYSMO_OPENSYSML_KERNELS`` - 1 more, each started when a check finds all the others busy. One kernel
    answers one request at a time: parallel checks on one kernel wait for each other."""
    wanted = max(1, int(os.environ.get(KERNELS_ENV) or 1))
    with _shared_lock:
        if not _pool:
            _pool.append(_shared_unlocked())
        kernel = min(_pool[:wanted], key=lambda k: _leases.get(id(k), 0))
        if _leases.get(id(kernel), 0) and len(_pool) < wanted:
            kernel = OpenSysMLKernel(request_timeout_s=_pool[0].request_timeout_s)
            _pool.append(kernel)
        _leases[id(kernel)] = _leases.get(id(kernel), 0) + 1
    try:
        yield kernel
    finally:
        with _shared_lock:
            _leases[id(kernel)] -= 1
