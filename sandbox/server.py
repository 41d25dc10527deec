"""Long-lived tool servers: started on demand, health-checked, restarted after a crash, stopped at exit.

A concrete server (PlantUML picoweb, the OpenSysML kernel) implements ``_start`` and ``_healthy``;
callers use ``ensure()`` before each request and ``restart()`` when a request fails.
"""

from __future__ import annotations

import atexit
import socket
import subprocess
import threading
import time
import weakref
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sysmo.log import get_logger

log = get_logger(__name__)

_live: weakref.WeakSet[ToolServer] = weakref.WeakSet()

# Servers run under ``bwrap --die-with-parent`` (PR_SET_PDEATHSIG), which fires when the *thread* that started the
# process ends, not the process. Started from a worker thread (a tool check in an event loop's executor, a
# ``run_attempt`` per ``asyncio.run``), a server would die as soon as that thread's pool shut down, and the
# next check would pay a restart (about 1.4 s for PlantUML). So every server is started from this one thread, which
# lives as long as the process: a server still dies with sysmo, never with a passing thread.
_starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sysmo-tool-server-starter")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ToolServer(ABC):
    """Base of a supervised long-lived process. Thread-safe; one instance per process and tool."""

    name = "server"
    start_timeout_s = 60.0

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.proc: subprocess.Popen | None = None
        self.restarts = 0
        self.started_at: float | None = None
        _live.add(self)

    @abstractmethod
    def _start(self) -> subprocess.Popen | None:
        """Start the process (return it if there is one to supervise)."""

    @abstractmethod
    def _healthy(self) -> bool:
        """A cheap live check: does the server answer right now?"""

    def _stop(self) -> None:
        """Release resources beyond the process (override when needed)."""

    def process_tree(self) -> list[int]:
        """The supervised process and all its descendants (every thread's children, via /proc)."""
        if self.proc is None:
            return []
        found, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    todo += [int(c) for c in (task / "children").read_text().split()]
                except OSError:
                    pass
        return found

    def alive(self) -> bool:
        return self.proc is None or self.proc.poll() is None

    def ensure(self) -> None:
        """Start the server if it is not running (or died); wait until it is healthy."""
        with self._lock:
            if self.started_at is not None and self.alive():
                return
            if self.started_at is not None:
                log.warning("server.crashed", server=self.name, returncode=self.proc.returncode if self.proc else None)
                self.restarts += 1
                self.stop()
            self.proc = self._start_from_starter_thread()
            self.started_at = time.monotonic()
            deadline = time.monotonic() + self.start_timeout_s
            while time.monotonic() < deadline:
                if self.proc is not None and self.proc.poll() is not None:
                    break
                if self._healthy():
                    log.info("server.started", server=self.name, seconds=round(time.monotonic() - self.started_at, 3))
                    return
                time.sleep(0.05)
            self.stop()
            from sysmo.errors import ToolCrashError

            raise ToolCrashError(f"{self.name} server did not become healthy within {self.start_timeout_s:.0f} s")

    def _start_from_starter_thread(self) -> subprocess.Popen | None:
        from sysmo.sandbox.reaper import sweep_once

        sweep_once()  # servers a crashed sysmo left behind are stopped before ours start
        try:
            started = _starter.submit(self._start)
        except RuntimeError:  # the interpreter is shutting down: no new threads, and the server dies with it anyway
            return self._start()
        return started.result()

    def restart(self) -> None:
        with self._lock:
            self.restarts += 1
            self.stop()
            self.ensure()

    def stop(self) -> None:
        with self._lock:
            try:
                self._stop()
            finally:
                if self.proc is not None and self.proc.poll() is None:
                    self.proc.terminate()
                    try:
                        self.proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        self.proc.kill()
                        self.proc.wait(timeout=5)
                self.proc = None
                self.started_at = None


@atexit.register
def _stop_all() -> None:
    for server in list(_live):
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass
