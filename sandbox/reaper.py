"""Leftovers of a sysmo that died: tool servers still running, their temp folders and empty cgroups.

Each server folder (``sysmo-plantuml-server-*``, ``sysmo-opensysml-*``), sandbox folder (``sysmo-box-*``:
the owner file beside the ``box`` work dir, where the command cannot touch it) and jail root
(``sysmo-root-*``) holds an ``owner`` file: the pid and start time of the sysmo process that made it; a
server folder also names the server's process (``server.json``). Containers of the docker backend carry
the same as a label and are removed by the next ``DockerSandbox``. ``sweep_stale()``, run
once per process before the first server starts, stops the server of every folder whose owner is gone
and deletes the folder; cgroups are swept by ``CgroupLimiter.sweep_stale``. The parent-death signal
makes leftovers rare (a SIGKILLed sysmo takes its servers with it); this catches the rest.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from functools import lru_cache
from pathlib import Path

from sysmo.log import get_logger
from sysmo.sandbox.cgroups import CgroupGroup

log = get_logger(__name__)

PREFIXES = ("sysmo-plantuml-server-", "sysmo-opensysml-", "sysmo-box-", "sysmo-root-")
OWNERLESS_AGE_S = 24 * 3600  # folders of versions that wrote no owner file: removed once a day old


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (field 22 of /proc/<pid>/stat), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int, started: str) -> bool:
    return start_time(pid) == started


def mark_owner(folder: Path) -> None:
    """Record this process as the owner of ``folder``."""
    (folder / "owner").write_text(f"{os.getpid()} {start_time(os.getpid())}\n")


def record_server(folder: Path, pid: int, group: CgroupGroup | None) -> None:
    """Name the server process (and its cgroup dirs) so that a later sysmo can stop it."""
    info = {"pid": pid, "started": start_time(pid), "cgroups": [str(d) for d in group.dirs] if group else []}
    (folder / "server.json").write_text(json.dumps(info))


def _stop_server(folder: Path) -> bool:
    try:
        info = json.loads((folder / "server.json").read_text())
    except (OSError, ValueError):
        return False
    stopped = False
    pid = int(info.get("pid", 0))
    if pid > 1 and _alive(pid, str(info.get("started"))):
        try:
            os.killpg(pid, signal.SIGKILL)  # the server was started in a session of its own
            stopped = True
        except (ProcessLookupError, PermissionError):
            pass
    dirs = [Path(d) for d in info.get("cgroups", []) if Path(d).is_dir()]
    if dirs:
        group = CgroupGroup(dirs)
        stopped |= bool(group.pids())
        group.remove()
    return stopped


def owner_gone(folder: Path) -> bool:
    """True when the process that made ``folder`` has exited (or the folder is ownerless and old)."""
    try:
        pid, started = (folder / "owner").read_text().split()
    except (OSError, ValueError):
        try:
            return time.time() - folder.stat().st_mtime > OWNERLESS_AGE_S
        except OSError:
            return False
    return not _alive(int(pid), started)


def sweep_stale(tmp: Path | None = None) -> list[str]:
    """Stop servers left by dead sysmo processes and delete their folders; returns what was swept."""
    from sysmo.sandbox.scratch import scratch_roots

    swept: list[str] = []
    entries = []
    for root in [Path(tmp)] if tmp else scratch_roots():
        try:
            entries += [p for p in root.iterdir() if p.name.startswith(PREFIXES) and p.is_dir() and not p.is_symlink()]
        except OSError:
            continue
    for folder in entries:
        if not owner_gone(folder):
            continue
        if _stop_server(folder):
            log.warning("reaper.stale_server_stopped", folder=str(folder))
        shutil.rmtree(folder, ignore_errors=True)
        swept.append(folder.name)
    if swept:
        log.info("reaper.swept", folders=len(swept))
    return swept


@lru_cache(maxsize=1)
def sweep_once() -> list[str]:
    """``sweep_stale()`` the first time it is called in this process."""
    return sweep_stale()
