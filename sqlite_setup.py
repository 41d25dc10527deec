"""Opening SQLite files that several processes share (the LLM cache, checkpoints, the experiment store).

SQLite's busy timeout does not cover every lock taken while a database is first set up: when two processes
switch a new file to WAL at the same moment, one of them gets ``database is locked`` at once (seen with
Ray workers opening the shared LLM cache together). The set-up steps are idempotent, so they are repeated
with a short random back-off until they succeed or ``SETUP_TIMEOUT_S`` has passed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_delay, wait_random_exponential

from sysmo.log import get_logger

SETUP_TIMEOUT_S = 30.0

log = get_logger(__name__)


def is_lock_contention(exc: BaseException) -> bool:
    """``database is locked`` / ``database table is locked`` / ``database is busy``: another process holds it."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _log_retry(state: RetryCallState) -> None:
    log.debug("sqlite.setup_retry", attempt=state.attempt_number,
              error=str(state.outcome.exception()) if state.outcome else None)


def set_up_shared(conn: sqlite3.Connection, create_tables: Callable[[], Any], *,
                  timeout_s: float = SETUP_TIMEOUT_S) -> None:
    """Switch ``conn``'s file to WAL and run ``create_tables`` (idempotent: ``CREATE ... IF NOT EXISTS``),
    repeating both while another process holds the lock."""

    def set_up() -> None:
        enable_wal(conn)
        create_tables()

    retrying = Retrying(
        retry=retry_if_exception(is_lock_contention),
        wait=wait_random_exponential(multiplier=0.01, max=0.5),
        stop=stop_after_delay(timeout_s),
        before_sleep=_log_retry,
        reraise=True,
    )
    retrying(set_up)


def max_variables(conn: sqlite3.Connection) -> int:
    """Parameters one statement of ``conn`` may take (32766 since SQLite 3.32, 999 before)."""
    return min(32766, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))


ROWS_PER_STATEMENT = 256  # the most rows one multi-row statement takes


def insert_rows(conn: sqlite3.Connection, head: str, rows: Sequence[Sequence[Any]], *, width: int,
                limit: int) -> None:
    """``head`` (``INSERT ... VALUES ``) followed by one ``(?,...)`` group per row of ``width`` values: one step of
    SQLite for many rows, so a writer thread gives up and takes back the interpreter's lock once per statement, not
    once per row (``executemany``). The rows go in chunks of a power of two rows (at most ``ROWS_PER_STATEMENT``
    and ``limit`` parameters, ``max_variables``): the connection keeps each statement it compiled, and a statement
    per number of rows a batch happened to have grew its memory with the length of a run (51 MB of SQLite's own for
    2,000 attempts of ``speed/scale.py``, 7 MB without the cache)."""
    per = min(ROWS_PER_STATEMENT, max(1, limit // width))
    largest = 1 << (per.bit_length() - 1)  # a power of two
    group = "(" + ",".join("?" * width) + ")"
    start = 0
    while start < len(rows):
        size = min(largest, 1 << ((len(rows) - start).bit_length() - 1))
        chunk = rows[start:start + size]
        conn.execute(head + ",".join([group] * size), [v for row in chunk for v in row])
        start += size


def enable_wal(conn: sqlite3.Connection) -> None:
    """Switch ``conn``'s database to WAL unless it already is (reading the mode takes no write lock)."""
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    if str(mode).lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")


class WrittenKeys:
    """Which keys (attempt ids, thread ids) a file may already hold rows for, so that writing one needs its old
    rows deleted first: any key in a file that was there when opened (a resumed run), only the keys written
    through this object in a file it saw created. Make it before the file is opened."""

    def __init__(self, path: Path) -> None:
        self.new_file = not path.exists() or path.stat().st_size == 0
        self._written: set[str] = set()

    def may_hold(self, key: str) -> bool:
        return not self.new_file or key in self._written

    def add(self, keys: Iterable[str]) -> None:
        """Record keys whose rows are now committed."""
        self._written.update(keys)
