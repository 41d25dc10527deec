"""Several processes opening a shared SQLite file at the same moment (Ray workers and the LLM cache)."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from sysmo.graphs.checkpoint import CheckpointStore
from sysmo.llm.cache import ResponseCache
from sysmo.sqlite_setup import enable_wal, is_lock_contention, set_up_shared
from sysmo.store import Store

OPENERS = 6
ROUNDS = 8  # without the retry, about one round in four lost an opener to "database is locked"


def _open(kind: str, path: str, barrier, results) -> None:  # runs in a forked child
    opener = {"cache": ResponseCache, "store": Store, "checkpoints": CheckpointStore}[kind]
    barrier.wait()  # all openers start together
    try:
        opener(Path(path))
        results.put("ok")
    except Exception as exc:  # reported to the parent, which asserts on it
        results.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("kind", ["cache", "store", "checkpoints"])
def test_processes_opening_a_new_database_together_all_succeed(tmp_path, kind):
    ctx = multiprocessing.get_context("fork")
    outcomes = []
    for round_index in range(ROUNDS):
        path = tmp_path / f"{kind}{round_index}.sqlite"
        barrier, results = ctx.Barrier(OPENERS), ctx.Queue()
        procs = [ctx.Process(target=_open, args=(kind, str(path), barrier, results)) for _ in range(OPENERS)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(60)
        outcomes += [results.get(timeout=5) for _ in procs]
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [o for o in outcomes if o != "ok"] == []


def test_set_up_repeats_only_lock_contention(tmp_path):
    db = sqlite3.connect(tmp_path / "x.sqlite")
    calls = []

    def locked_twice():
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")

    set_up_shared(db, locked_twice)
    assert len(calls) == 3 and db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    def broken():
        raise sqlite3.OperationalError("no such table: x")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        set_up_shared(db, broken)
    assert is_lock_contention(sqlite3.OperationalError("database table is locked"))
    assert not is_lock_contention(ValueError("locked"))


def test_set_up_gives_up_after_its_timeout(tmp_path):
    def always_locked():
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        set_up_shared(sqlite3.connect(tmp_path / "x.sqlite"), always_locked, timeout_s=0.2)


def test_enable_wal_leaves_a_wal_database_alone(tmp_path):
    db = sqlite3.connect(tmp_path / "x.sqlite")
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    enable_wal(db)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert "PRAGMA journal_mode=WAL" in statements
    statements.clear()
    enable_wal(db)  # already WAL: only read, never switched again (the switch is what takes the lock)
    assert statements == ["PRAGMA journal_mode"]


def test_rows_go_in_few_statement_shapes_whatever_the_batch_sizes() -> None:
    """``insert_rows`` writes every row, in order, in chunks of a power of two rows: the statements a connection
    compiles and keeps stay few over a long run (one per batch size grew its memory with the run's length)."""
    from sysmo.sqlite_setup import ROWS_PER_STATEMENT, insert_rows

    statements: set[str] = set()

    class Recording(sqlite3.Connection):
        def execute(self, sql: str, *args: object) -> sqlite3.Cursor:  # type: ignore[override]
            statements.add(sql)
            return super().execute(sql, *args)

    conn = sqlite3.connect(":memory:", factory=Recording)
    conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    expected: list[tuple[int, str]] = []
    for size in range(0, 3 * ROWS_PER_STATEMENT):
        rows = [(len(expected) + i, f"row {i}") for i in range(size)]
        insert_rows(conn, "INSERT INTO t VALUES ", rows, width=2, limit=999)
        expected.extend(rows)
    assert conn.execute("SELECT a, b FROM t ORDER BY rowid").fetchall() == expected
    inserts = {s.count("(?,?)") for s in statements if s.startswith("INSERT")}
    assert inserts == {1, 2, 4, 8, 16, 32, 64, 128, 256}  # 9 statements for 767 batch sizes
    conn.close()
