"""Memory and pids limits through cgroups (v1 or v2), used when the hierarchy is writable."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from sysmo.sandbox.base import Limits

ROOT = Path("/sys/fs/cgroup")


def _own_path(controller: str) -> str:
    """This process's cgroup path for a v1 controller (or the v2 path for controller '')."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if (controller and controller in ctrls.split(",")) or (not controller and ctrls == ""):
            return path
    return "/"


class CgroupGroup:
    """One cgroup per command, with one directory per controller (v1) or one directory (v2)."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs

    def join(self, pid: int) -> None:
        for d in self.dirs:
            (d / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            try:
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return found

    def kill_all(self) -> None:
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)


class CgroupLimiter:
    """Creates per-command cgroups under the current process's own cgroup."""

    def __init__(self, version: int, bases: dict[str, Path]) -> None:
        self.version = version
        self.bases = bases

    @classmethod
    def detect(cls) -> CgroupLimiter | None:
        if os.environ.get("SYSMO_NO_CGROUPS") == "1":
            return None
        if (ROOT / "cgroup.controllers").exists():  # unified v2
            base = ROOT / _own_path("").lstrip("/")
            if os.access(base, os.W_OK):
                return cls(2, {"": base})
            return None
        bases: dict[str, Path] = {}
        for controller in ("memory", "pids"):
            base = ROOT / controller / _own_path(controller).lstrip("/")
            if base.is_dir() and os.access(base, os.W_OK):
                bases[controller] = base
        return cls(1, bases) if bases else None

    def create(self, name: str, limits: Limits) -> CgroupGroup | None:
        dirs: list[Path] = []
        try:
            if self.version == 2:
                d = self.bases[""] / name
                d.mkdir()
                dirs.append(d)
                if limits.memory_mb:
                    (d / "memory.max").write_text(str(limits.memory_mb * 1024 * 1024))
                    (d / "memory.swap.max").write_text("0")
                if limits.pids:
                    (d / "pids.max").write_text(str(limits.pids))
                return CgroupGroup(dirs)
            if "memory" in self.bases and limits.memory_mb:
                d = self.bases["memory"] / name
                d.mkdir()
                dirs.append(d)
                (d / "memory.limit_in_bytes").write_text(str(limits.memory_mb * 1024 * 1024))
                sw = d / "memory.memsw.limit_in_bytes"
                if sw.exists():
                    try:
                        sw.write_text(str(limits.memory_mb * 1024 * 1024))
                    except OSError:
                        pass
            if "pids" in self.bases and limits.pids:
                d = self.bases["pids"] / name
                d.mkdir()
                dirs.append(d)
                (d / "pids.max").write_text(str(limits.pids))
        except OSError:
            CgroupGroup(dirs).remove()
            return None
        return CgroupGroup(dirs) if dirs else None
