"""The warm PlantUML server: one confined JVM per process, spoken to over its stdin/stdout.

>>> response = plantuml_server().render("@startuml\\nclass A\\n@enduml")
>>> response.error is None, response.svg.startswith("<svg")
(True, True)
>>> plantuml_server().render("@startuml\\nclass A\\nfoo bar\\n@enduml", draw=False).error_line
3

Transport: ``PlantUMLPipe.java`` (compiled once against the PlantUML jar by the JDK's ``javac``,
``tools.java_build``) reads diagrams from the JVM's stdin and answers on its stdout: no socket, no HTTP, no relay.
A check asks it to parse only (``draw=False``: PlantUML's verdict, error line and description, nothing drawn,
about a fifth of a render's time); ``render_svg`` asks for the picture. The diagram is read as PlantUML's picoweb
reads it, so the verdicts are picoweb's (the one difference seen, 1 of 280 diagrams: the description's entity count,
which drawing can raise). Without ``javac`` (a JRE) the server is PlantUML's own ``-picoweb`` as before: HTTP
through a Unix socket, every request drawn.

Confinement (``sandbox.confine.confinement_level``): under bubblewrap or, without it, in the ``unshare``
jail the JVM gets its own mount/pid/net namespaces, a root holding only ``/usr``, the ``/etc`` entries Java
needs, the jars and an empty work dir, no capabilities, runs as nobody, and has a network namespace with
nothing but its own loopback. With the pipe nothing listens anywhere; with picoweb sysmo reaches it through a
Unix socket in that work dir, relayed to the loopback port by a small pid 1 (``sandbox.jail``; a Unix socket
crosses network namespaces through the file system, needs no privilege to reach and only its owner and root may
open it). Nothing listens on the host's 127.0.0.1. With no confinement at all the server is refused unless ``--allow-unconfined``. Always: a cleared
environment, ``PLANTUML_SECURITY_PROFILE=SANDBOX`` (``!include``, ``%getenv``, URLs and file functions cannot
read the host), a heap bound, cgroup limits and the parent-death signal.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from pydantic import BaseModel

from sysmo.config import settings
from sysmo.errors import ConfigError, ToolCrashError
from sysmo.log import get_logger
from sysmo.sandbox.base import TOOLS_INSIDE, Limits, hand_to_nobody
from sysmo.sandbox.cgroups import CgroupGroup, CgroupLimiter
from sysmo.sandbox.confine import (
    JAIL_ISOLATION,
    JailSpec,
    confinement_level,
    etc_entries_for_java,
    JAIL_SCRIPT,
    Launch,
    jail_launch,
    jail_python,
    require_confinement,
    set_parent_death_signal,
    system_view,
)
from sysmo.sandbox.local import as_nobody, bwrap_base
from sysmo.sandbox.reaper import mark_owner, record_server
from sysmo.sandbox.seccomp import isolation_tags
from sysmo.sandbox.server import ToolServer, free_port

log = get_logger(__name__)

# SANDBOX is PlantUML's strictest profile: no file, environment or URL access at all.
ALLOWED_SECURITY_PROFILES = ("SANDBOX",)
HEALTH_PROBE = "@startuml\nclass HealthProbe\n@enduml\n"
BOX = "/box"
JAR_INSIDE = "/opt/sysmo-tools/plantuml.jar"
PIPE_INSIDE = "/opt/sysmo-tools/plantuml-pipe.jar"
PIPE_SOURCE = Path(__file__).resolve().parent / "PlantUMLPipe.java"
PIPE_THREADS = 2  # diagrams parsed or drawn at once by the pipe's JVM (one per core here)
JAIL_PORT = 8080  # inside the server's own network namespace: no other process can hold it
SOCKET_NAME = "plantuml.sock"
# The C1 compiler alone and the serial collector: PlantUML's code is large and each diagram takes another path
# through it, so C2's compilations cost more CPU than they return. Measured (server's CPU, the project's 19
# diagrams rendered again and again, 2 cores): 19 renders 5.8 -> 3.1 s, 57 renders 9.7 -> 4.7 s, 285 renders
# 21.3 -> 10.7 s, 950 renders 43.9 -> 26.3 s; wall time lower up to several hundred renders (950: 23.4 -> 25.8 s,
# C2's compiler thread then uses the second core). Used by the server and by the batch check.
JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


class RenderResponse(BaseModel):
    """What the server answered for one diagram: the SVG and PlantUML's error (line 1-based in the source)."""

    svg: str
    error: str | None = None
    error_line: int | None = None
    description: str | None = None
    status: int = 200
    duration_s: float = 0.0


def security_profile() -> str:
    """The configured PlantUML security profile, refused unless it is strict enough for untrusted text."""
    profile = settings().tools.plantuml_security_profile.upper()
    if profile not in ALLOWED_SECURITY_PROFILES:
        raise ConfigError(
            f"tools.plantuml_security_profile={profile!r} would let diagrams read host files or the environment; "
            f"set it to one of {', '.join(ALLOWED_SECURITY_PROFILES)}"
        )
    return profile


_etc_entries_for_java = etc_entries_for_java


def pipe_jar(java: str, plantuml: Path) -> Path | None:
    """``PlantUMLPipe.java`` compiled against ``plantuml`` by the ``javac`` beside ``java`` (made once), or None:
    no ``javac`` (a JRE), or it did not compile; the server is then PlantUML's picoweb."""
    from sysmo.tools.java_build import compiled_jar, javac_beside

    javac = javac_beside(java)
    return None if javac is None else compiled_jar("plantuml-pipe", PIPE_SOURCE, plantuml, javac,
                                                   "plantuml_server.pipe_failed")


class PipeClient:
    """Requests to the pipe's JVM, several in flight, each answer matched to its request by id (a reader thread)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._write = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="sysmo-plantuml-pipe", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        out = self.proc.stdout
        try:
            while header := out.readline():
                ident, json_size, svg_size = header.split()
                answer = json.loads(out.read(int(json_size)))
                answer["svg"] = out.read(int(svg_size)).decode(errors="replace")
                with self._lock:
                    future = self._pending.pop(int(ident), None)
                if future is not None and not future.done():
                    future.set_result(answer)
        except (OSError, ValueError) as exc:
            log.warning("plantuml_server.pipe_read_failed", error=str(exc))
        self.fail(ConnectionError("the PlantUML server closed its output"))

    def fail(self, exc: Exception) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(exc)

    def ask(self, source: str, draw: bool, timeout: float) -> dict:
        """PlantUML's answer for one diagram; ``TimeoutError`` when it takes longer than ``timeout``, ``OSError``
        when the server went away."""
        ident, body = next(self._ids), source.encode()
        future: Future = Future()
        with self._lock:
            self._pending[ident] = future
        try:
            with self._write:
                self.proc.stdin.write(f"{ident} {'svg' if draw else 'check'} {len(body)}\n".encode() + body)
                self.proc.stdin.flush()
            return future.result(timeout)
        except FutureTimeout:
            raise TimeoutError(f"PlantUML did not answer within {timeout:.0f} s") from None
        except (BrokenPipeError, ValueError) as exc:  # ValueError: a closed pipe
            raise ConnectionError(f"the PlantUML server is gone ({exc})") from exc
        finally:
            with self._lock:
                self._pending.pop(ident, None)

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.fail(ConnectionError("the PlantUML server was stopped"))


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over the Unix socket the jail relays to the server's private loopback."""

    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.path))
        except OSError:
            sock.close()
            raise
        self.sock = sock


class PlantUMLServer(ToolServer):
    """A supervised ``java -jar plantuml.jar -picoweb:PORT:127.0.0.1`` (never ``--http-server``: it binds all interfaces)."""

    name = "plantuml"
    start_timeout_s = 60.0

    def __init__(
        self,
        jar: Path | None = None,
        heap_mb: int = 768,
        request_timeout_s: float = 30.0,
        confine: bool = True,
    ) -> None:
        super().__init__()
        self._jar = jar
        self.heap_mb = heap_mb
        self.request_timeout_s = request_timeout_s
        self.confine = confine
        self.port: int | None = None
        self.socket_path: Path | None = None  # set when picoweb runs in its own network namespace
        self.transport: str | None = None  # "pipe" (stdin/stdout) or "picoweb" (HTTP), set at start
        self._pipe: PipeClient | None = None
        self.isolation: list[str] = []
        self._dir: Path | None = None
        self._cgroup: CgroupGroup | None = None
        self._log_file = None

    # ------------------------------------------------------------------ process
    def jar(self) -> Path:
        from sysmo.tools.install import plantuml_jar

        return Path(self._jar or plantuml_jar()).resolve()

    def _start(self) -> subprocess.Popen:
        from sysmo.tools.install import java_binary

        profile = security_profile()
        jar = self.jar()
        java = Path(java_binary()).resolve()
        level = confinement_level() if self.confine else "none"
        if level == "none" and self.confine:
            require_confinement("the PlantUML server")
        pipe = pipe_jar(str(java), jar)
        self.transport = "pipe" if pipe is not None else "picoweb"
        from sysmo.sandbox.scratch import memory_scratch_root

        self._dir = Path(tempfile.mkdtemp(prefix="sysmo-plantuml-server-", dir=memory_scratch_root()))
        mark_owner(self._dir)
        box = self._dir / "box"
        box.mkdir()
        java_argv = [f"-Xmx{self.heap_mb}m", "-Xss4m", *JVM_FLAGS]
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PLANTUML_SECURITY_PROFILE": profile}
        self.socket_path, self.port = None, None
        if pipe is not None:
            server_argv = [str(java), *java_argv, "-cp", f"{JAR_INSIDE}:{PIPE_INSIDE}", "PlantUMLPipe",
                           str(PIPE_THREADS)]
            jars = [(str(jar), JAR_INSIDE), (str(pipe), PIPE_INSIDE)]
        else:
            server_argv = [str(java), *java_argv, "-jar", JAR_INSIDE, f"-picoweb:{JAIL_PORT}:127.0.0.1"]
            jars = [(str(jar), JAR_INSIDE)]
        java_home = [] if java.is_relative_to("/usr") else [(str(java.parent.parent), str(java.parent.parent))]
        if level in ("bwrap", "unshare"):
            hand_to_nobody(box)  # the server runs as nobody in its own network namespace (a private loopback)
        if level == "bwrap":
            line = bwrap_base(network=False)
            for host, inner in jars:
                line.args += ["--ro-bind", host, inner]
            for host, inner in java_home:
                line.args += ["--ro-bind", host, inner]
            line.args += ["--bind", str(box), BOX, "--chdir", BOX, "--clearenv"]
            relay = JailSpec(root="", files={}, cwd=BOX, env={**env, "HOME": BOX, "TMPDIR": "/tmp"},
                             argv=server_argv, relay=self._relays())
            python = Path(jail_python())
            if not python.is_relative_to("/usr"):  # no system Python: show ours (its standard library) read-only
                line.args += ["--ro-bind", sys.base_prefix, sys.base_prefix]
            line.data(JAIL_SCRIPT.read_text(), f"{TOOLS_INSIDE}/jail.py")
            line.data(relay.model_dump_json(), f"{TOOLS_INSIDE}/jail.json")
            launch = line.launch(as_nobody([jail_python(), "-I", "-S", f"{TOOLS_INSIDE}/jail.py",
                                            f"{TOOLS_INSIDE}/jail.json"]))
            self.isolation = ["bwrap", "netns", "unix-socket" if pipe is None else "pipe", *isolation_tags()]
            popen_env = {}
        elif level == "unshare":
            ro, links = system_view(_etc_entries_for_java(java))
            ro += [*jars, *java_home]
            spec = JailSpec(root=str(self._dir / "root"), ro=ro, symlinks=links, rw=[(str(box), BOX)], cwd=BOX,
                            env={**env, "HOME": BOX, "TMPDIR": "/tmp"}, argv=server_argv, relay=self._relays())
            (self._dir / "root").mkdir()
            launch = jail_launch(spec)
            self.isolation = list(JAIL_ISOLATION) + ["pipe" if pipe is not None else "unix-socket"]
            popen_env = {}
        else:
            log.warning("plantuml_server.unconfined", hint="install bubblewrap to confine the PlantUML server")
            if pipe is not None:
                self.port = None
                launch = Launch([str(java), *java_argv, "-cp", f"{jar}:{pipe}", "PlantUMLPipe", str(PIPE_THREADS)])
            else:
                self.port = free_port()
                launch = Launch([str(java), *java_argv, "-jar", str(jar), f"-picoweb:{self.port}:127.0.0.1"])
            self.isolation = ["none"]
            popen_env = {**env, "HOME": str(box), "TMPDIR": str(box)}
        limiter = CgroupLimiter.detect()
        limits = Limits(memory_mb=self.heap_mb + 768, pids=256)
        self._cgroup = limiter.create(CgroupLimiter.unique_name("plantuml"), limits) if limiter else None
        if self._cgroup is not None:
            self.isolation.append(f"cgroup-{limiter.version}")
        group = self._cgroup

        def preexec() -> None:
            set_parent_death_signal()  # the server dies with sysmo, even on SIGKILL
            if group is not None:
                group.join(os.getpid())
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            size = 64 * 1024 * 1024  # the server writes nothing but its log
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

        self._log_file = open(self._dir / "server.log", "wb")  # noqa: SIM115 - kept open for the process's life
        log.info("plantuml_server.start", port=self.port, jar=str(jar), isolation=self.isolation,
                 transport=self.transport)
        piped = pipe is not None
        try:
            proc = subprocess.Popen(
                launch.argv,
                cwd=str(box),
                env=popen_env,
                stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
                stdout=subprocess.PIPE if piped else self._log_file,
                stderr=self._log_file if piped else subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=preexec,
                pass_fds=launch.pass_fds,
            )
        finally:
            launch.close()
        record_server(self._dir, proc.pid, self._cgroup)
        self._pipe = PipeClient(proc) if piped else None
        return proc

    def _relays(self) -> list[tuple[str, int]]:
        """picoweb's port relayed to a Unix socket in the work dir (its own network namespace); none for the pipe."""
        if self.transport != "picoweb":
            return []
        self.port = JAIL_PORT
        self.socket_path = self._dir / "box" / SOCKET_NAME
        hand_to_nobody(self._dir / "box")  # the server runs as nobody and makes its socket there
        return [(f"{BOX}/{SOCKET_NAME}", self.port)]

    def _stop(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def server_log(self, limit: int = 4000) -> str:
        """The tail of the server's own output (for crash reports)."""
        if self._dir is None or not (self._dir / "server.log").is_file():
            return ""
        return (self._dir / "server.log").read_bytes()[-limit:].decode(errors="replace")

    def pids(self) -> list[int]:
        """Every process of the server (bwrap and the JVM)."""
        return self.process_tree()

    # ------------------------------------------------------------------ requests
    def _post(self, port: int, source: str, timeout: float) -> RenderResponse:
        body = json.dumps({"source": source, "options": ["-tsvg"]}).encode()
        start = time.monotonic()
        if self.socket_path is not None:
            conn: http.client.HTTPConnection = UnixHTTPConnection(self.socket_path, timeout=timeout)
            conn.connect()
        else:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            if self.socket_path is None:
                conn.connect()
                # one small request per connection: do not let Nagle hold back its last segment
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.request("POST", "/render", body=body, headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            svg = reply.read().decode(errors="replace")
            line = reply.getheader("X-PlantUML-Diagram-Error-Line")
            return RenderResponse(
                svg=svg,
                status=reply.status,
                error=reply.getheader("X-PlantUML-Diagram-Error"),
                error_line=int(line) if line and line.strip().lstrip("-").isdigit() else None,
                description=reply.getheader("X-PlantUML-Diagram-Description"),
                duration_s=time.monotonic() - start,
            )
        finally:
            conn.close()

    def _ask(self, pipe: PipeClient, source: str, draw: bool, timeout: float) -> RenderResponse:
        start = time.monotonic()
        answer = pipe.ask(source, draw, timeout)
        return RenderResponse(svg=answer.get("svg") or "", status=answer.get("status", 500), error=answer.get("error"),
                              error_line=answer.get("error_line"), description=answer.get("description"),
                              duration_s=time.monotonic() - start)

    def _healthy(self) -> bool:
        try:
            if self._pipe is not None:
                response = self._ask(self._pipe, HEALTH_PROBE, draw=False, timeout=5)
                return response.status == 200 and response.error is None
            if self.port is None:
                return False
            response = self._post(self.port, HEALTH_PROBE, timeout=5)
        except (OSError, http.client.HTTPException):
            return False
        return response.status == 200 and response.error is None and "<svg" in response.svg

    def render(self, source: str, timeout_s: float | None = None, *, draw: bool = True) -> RenderResponse:
        """PlantUML's verdict on one diagram and, with ``draw``, its SVG (``draw=False``: parsed, not drawn, where
        the pipe runs; picoweb always draws). A dead or wedged server is restarted and the request tried once more.

        Raises ``TimeoutError`` when the diagram takes longer than the timeout (the server is then
        restarted so that a runaway render cannot keep a CPU busy; the diagram is not tried again).
        """
        timeout = timeout_s or self.request_timeout_s
        last: Exception | None = None
        for attempt in range(2):
            self.ensure()
            port, pipe = self.port, self._pipe
            try:
                if pipe is not None:
                    return self._ask(pipe, source, draw, timeout)
                assert port is not None
                return self._post(port, source, timeout)
            except TimeoutError:
                log.warning("plantuml_server.request_timeout", seconds=timeout)
                self.restart()
                raise
            except (OSError, http.client.HTTPException) as exc:
                log.warning("plantuml_server.request_failed", error=str(exc), attempt=attempt)
                last = exc
                with self._lock:
                    if self.port == port and self._pipe is pipe:  # nobody restarted it meanwhile
                        self.restart()
        raise ToolCrashError(f"PlantUML server failed twice ({last}); server log tail:\n{self.server_log()}")


_shared: PlantUMLServer | None = None
_shared_lock = threading.Lock()


def plantuml_server() -> PlantUMLServer:
    """The process-wide PlantUML server (created on first use, started by the first request, stopped at exit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = PlantUMLServer()
        return _shared
