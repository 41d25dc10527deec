"""Where short-lived, small tool files go: a memory file system when there is one.

Each OpenSysML validation writes a model into a fresh folder and deletes it afterwards; each PlantUML server keeps
a small work dir. On a disk file system deleting is not free (on this project's machines, an ext4 mounted with
``discard``: 4.3 ms to make, fill and delete one folder, against 0.06 ms on tmpfs, measured with 200 folders), so
these folders live under ``/dev/shm`` when it is a writable tmpfs with at least ``MIN_FREE_MB`` free, else in the
temp dir as before. Only folders of bounded size go there (the kernel's exports are bounded by its RLIMIT_FSIZE);
TLC's work dirs, whose state files can grow to gigabytes, stay in the temp dir. The reaper sweeps both places.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path

MEMORY_DIR = Path("/dev/shm")
MIN_FREE_MB = 256


def _is_tmpfs(path: Path) -> bool:
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            return any(line.split()[1:3] == [str(path), "tmpfs"] for line in mounts if len(line.split()) > 2)
    except OSError:
        return False


@lru_cache(maxsize=1)
def memory_scratch_root() -> Path:
    """``/dev/shm`` when it is a writable tmpfs with room, else the temp dir."""
    try:
        usable = (MEMORY_DIR.is_dir() and os.access(MEMORY_DIR, os.W_OK | os.X_OK) and _is_tmpfs(MEMORY_DIR)
                  and os.statvfs(MEMORY_DIR).f_bavail * os.statvfs(MEMORY_DIR).f_frsize >= MIN_FREE_MB << 20)
    except OSError:
        usable = False
    return MEMORY_DIR if usable else Path(tempfile.gettempdir())


def scratch_roots() -> list[Path]:
    """Every place sysmo makes its tool folders in (the reaper looks in each)."""
    roots = [Path(tempfile.gettempdir())]
    memory = memory_scratch_root()
    return roots if memory in roots else [*roots, memory]
