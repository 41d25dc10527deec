"""A content-addressed cache of deterministic SANY/TLC runs: the same inputs give the stored output, no JVM.

A run is deterministic, so cacheable, when its output depends only on its inputs: SANY always; TLC with one
worker thread (``-workers 1``) and, in simulation mode, a ``-seed``. The key is the SHA-256 of the main class,
the arguments, every input file (name and text), the JVM flags and heap, the tla2tools.jar and our TLA+
library contents. Only runs that ended on their own are stored: a timeout, an out-of-memory kill or a run
killed for any reason is never cached (another machine or a quieter moment may finish it).

On for ``sysmo run`` (its repair loops' checks and its scoring), ``sysmo reproduce sysmobench`` and
``speed/tla_cascade_speed.py``, under ``<home>/tla-run-cache``, unless ``SYSMO_TLA_RUN_CACHE`` names another
directory or turns it off (``0``, ``off``, ``no``, ``false``); off elsewhere unless the variable names a directory.
A run served from it is marked ``cached`` (its ``duration_s`` is the time the caller waited; the check's details
say ``cached``). Entries are JSON files named by their key; delete the directory to empty it. ``sysmo run`` keeps
its default folder under ``$SYSMO_TLA_RUN_CACHE_MB`` (1,024 MB), the least recently used entries going first.

>>> with enabled(Path("/tmp/cache")):
...     card = cascade_for(TaskKind.TLA).score(artifact, task)   # second time: no TLC, same card
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from functools import lru_cache
from pathlib import Path

from sysmo.config import settings
from sysmo.log import get_logger
from sysmo.sandbox import RunResult

log = get_logger(__name__)

ENV = "SYSMO_TLA_RUN_CACHE"
OFF = ("0", "off", "no", "false")
MAX_MB_ENV = "SYSMO_TLA_RUN_CACHE_MB"
DEFAULT_MAX_MB = 1024.0
VERSION = "1"
_inflight_lock = threading.Lock()
_inflight: dict[str, Future[RunResult]] = {}  # key -> the run of it under way in this process


def directory() -> Path | None:
    value = os.environ.get(ENV, "").strip()
    return Path(value) if value and value.lower() not in OFF else None


def use_default() -> Path | None:
    """Turn the cache on under ``<SYSMO_HOME>/tla-run-cache`` unless ``$SYSMO_TLA_RUN_CACHE`` already names a folder
    (``sysmo run``, ``sysmo reproduce sysmobench`` and its table in ``reproduce all``); returns the folder in use, or
    None when the variable turns the cache off."""
    if set_by_variable():
        return directory()
    folder = default_folder()
    os.environ[ENV] = str(folder)
    return folder


def set_by_variable() -> bool:
    """Whether ``$SYSMO_TLA_RUN_CACHE`` decides: it names a folder or turns the cache off (``0``, ``off``, ``no``,
    ``false``)."""
    return directory() is not None or os.environ.get(ENV, "").strip().lower() in OFF


def default_folder() -> Path:
    return settings().home / "tla-run-cache"


@contextlib.contextmanager
def enabled(path: Path) -> Iterator[Path]:
    """Turn the cache on (at ``path``) for the duration of the block."""
    before = os.environ.get(ENV)
    os.environ[ENV] = str(path)
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


@contextlib.contextmanager
def for_run() -> Iterator[Path | None]:
    """The cache on under ``<SYSMO_HOME>/tla-run-cache`` for the duration of a ``sysmo run`` (its worker processes
    inherit it), unless ``$SYSMO_TLA_RUN_CACHE`` already names a folder or turns the cache off; yields the folder
    in use, or None."""
    if set_by_variable():
        yield directory()
        return
    with enabled(default_folder()) as folder:
        prune(folder, max_mb())
        yield folder


def max_mb() -> float:
    """The size the default cache is kept under (``$SYSMO_TLA_RUN_CACHE_MB``, 1,024 MB by default)."""
    value = os.environ.get(MAX_MB_ENV, "").strip()
    try:
        return float(value) if value else DEFAULT_MAX_MB
    except ValueError:
        return DEFAULT_MAX_MB


def prune(folder: Path, limit_mb: float) -> int:
    """Delete the least recently used entries (by modification time: a hit touches its entry) until the folder
    holds at most three quarters of ``limit_mb``, when it holds more than ``limit_mb``; returns how many went."""
    entries = []
    for path in folder.glob("*/*.json"):
        try:
            stat = path.stat()
        except OSError:
            continue
        entries.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    if total <= limit_mb * 1024 * 1024:
        return 0
    removed = 0
    for _, size, path in sorted(entries):
        if total <= 0.75 * limit_mb * 1024 * 1024:
            break
        try:
            path.unlink(missing_ok=True)
        except OSError:  # a read-only folder: left as it is
            continue
        total -= size
        removed += 1
    log.info("tla_run_cache.pruned", folder=str(folder), removed=removed, left_mb=round(total / 2**20, 1))
    return removed


def deterministic(main_class: str, args: list[str]) -> bool:
    if main_class == "tla2sany.SANY":
        return True
    if main_class != "tlc2.TLC":
        return False
    workers = args[args.index("-workers") + 1] if "-workers" in args else "1"
    return workers == "1" and ("-simulate" not in args or "-seed" in args)


@lru_cache(maxsize=4)
def _tree_digest(path: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(path.rglob("*")) if path.is_dir() else [path]
    for file in files:
        if file.is_file():
            digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
            stat = file.stat()
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def key(main_class: str, args: list[str], files: dict[str, str], jvm_flags: list[str], heap_mb: int | None,
        readonly: list[Path], collect: list[str] | None) -> str:
    digest = hashlib.sha256(VERSION.encode())
    for part in (main_class, *args, "|", *jvm_flags, str(heap_mb), "|", *(collect or [])):
        digest.update(part.encode() + b"\0")
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name].encode()).digest())
    for path in readonly:
        digest.update(_tree_digest(path).encode())
    return digest.hexdigest()


def cached(
    run: Callable[[], RunResult], main_class: str, args: list[str], files: dict[str, str], jvm_flags: list[str],
    heap_mb: int | None, readonly: list[Path], collect: list[str] | None = None,
) -> RunResult:
    """``run()``, or its stored result when the cache is on and the same deterministic run was stored.

    With the cache on, a run asked for again while it is still running in this process (several agents'
    attempts at one spec scored side by side) waits for that run and gets its result, whatever it was (a
    time-out included: it is the same run at the same moment), instead of starting a second JVM."""
    folder = directory()
    if folder is None or not deterministic(main_class, args):
        return run()
    asked = time.monotonic()
    name = key(main_class, args, files, jvm_flags, heap_mb, readonly, collect)
    path = folder / name[:2] / f"{name}.json"
    stored = _stored(path, main_class, name)
    if stored is not None:
        return _served(stored, asked)
    with _inflight_lock:
        pending = _inflight.get(name)
        owner = pending is None
        if owner:
            pending = _inflight[name] = Future()
    if not owner:
        log.debug("tla_run_cache.shared_in_flight", main_class=main_class, key=name[:12])
        return _served(pending.result(), asked)
    try:
        stored = _stored(path, main_class, name)  # stored by another process meanwhile
        result = _served(stored, asked) if stored is not None else _run_and_store(run, path)
    except BaseException as exc:
        pending.set_exception(exc)
        raise
    else:
        pending.set_result(result)
        return result
    finally:
        with _inflight_lock:
            _inflight.pop(name, None)


def _served(result: RunResult, asked: float) -> RunResult:
    """A copy of a stored or shared run for this caller: marked ``cached``, its duration the time this caller
    waited for it (the tool did not run for it)."""
    return result.model_copy(deep=True, update={"cached": True, "duration_s": time.monotonic() - asked})


def _stored(path: Path, main_class: str, name: str) -> RunResult | None:
    if not path.is_file():
        return None
    try:
        result = RunResult.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        path.unlink(missing_ok=True)
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: pruned last
    log.debug("tla_run_cache.hit", main_class=main_class, key=name[:12])
    return result


def _run_and_store(run: Callable[[], RunResult], path: Path) -> RunResult:
    result = run()
    if result.timed_out or result.oom_killed or result.returncode is None:
        return result
    tmp_name = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8") as tmp:
            tmp_name = tmp.name
            tmp.write(json.dumps(result.model_dump(mode="json")))
        os.replace(tmp_name, path)  # atomic: a parallel reader sees the whole entry or none
    except OSError as exc:  # a full or read-only disk: the run's result stands, it is just not kept
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
        log.warning("tla_run_cache.not_stored", path=str(path.parent), error=str(exc)[:200])
    return result
