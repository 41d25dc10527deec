"""LangGraph checkpoints of every step of an attempt, in SQLite, so each step can be listed and forked.

An attempt's steps are checkpointed in memory while it runs (``StepRecorder``) and written to SQLite in one
transaction when it ends (also when it fails), in LangGraph's own ``SqliteSaver`` format: ``SqliteSaver`` (and ``history``) read
them back, and an agent graph with LangGraph's ``AsyncSqliteSaver`` (its model calls are coroutines, so it
runs with ``ainvoke``) resumes or forks from any of them. Writing per step instead would
cost a commit per node visit; an attempt cut off by SIGKILL is re-run on resume anyway (its LLM calls come
from the cache), so nothing the deferred write could have kept is lost. The local runner writes an attempt's
steps while the next attempt runs, always before the attempt's record, so a stored attempt has its steps.

One ``CheckpointStore`` file holds many attempts (thread id = attempt id).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel
from sysmo.sqlite_setup import set_up_shared


class _RecordingCursor:
    """Stands in for a SQLite cursor: keeps each statement and its parameters instead of running them."""

    def __init__(self, statements: list[tuple[bool, str, Any]]) -> None:
        self._statements = statements

    def execute(self, query: str, params: Sequence[Any] = ()) -> None:
        self._statements.append((False, query, tuple(params)))

    def executemany(self, query: str, rows: Iterable[Sequence[Any]]) -> None:
        self._statements.append((True, query, [tuple(r) for r in rows]))


class StepRecorder(SqliteSaver):
    """The checkpointer of one running attempt: LangGraph's own ``SqliteSaver`` code serialises every step,
    but its statements are kept in memory, for ``CheckpointStore.save`` to run on the file in one go.

    The rows are exactly ``SqliteSaver``'s, each serialised once, and no disk is touched while the attempt runs.
    It only records: an attempt starts a fresh thread, so there is nothing to read back during the run (read
    the steps from the file afterwards, with ``history`` or a ``SqliteSaver``). ``destination`` names the file
    the steps are meant for (``CheckpointStore.recorder``)."""

    def __init__(self, destination: Path | None = None) -> None:
        super().__init__(conn=None)  # type: ignore[arg-type]
        self.is_setup = True
        self.destination = destination
        self.statements: list[tuple[bool, str, Any]] = []  # (executemany?, query, parameters)

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[Any]:
        yield _RecordingCursor(self.statements)

    @property
    def steps(self) -> int:
        """How many checkpoints were recorded."""
        return sum(1 for many, query, _ in self.statements if not many and "INTO checkpoints" in query)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if self.statements:
            raise NotImplementedError("a StepRecorder only records an attempt's steps; read them from the "
                                      "checkpoint file once it is saved (graphs.checkpoint.history, SqliteSaver)")
        return None  # a fresh thread: the run starts from its input

    def list(self, *args: Any, **kwargs: Any) -> Iterator[CheckpointTuple]:
        raise NotImplementedError("a StepRecorder only records; list the steps from the checkpoint file once saved")

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        self.put_writes(config, writes, task_id, task_path)


class CheckpointStore:
    """A SQLite file of LangGraph checkpoints shared by the attempts of an experiment (thread-safe)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout=30000")
        set_up_shared(self._conn, SqliteSaver(self._conn).setup)  # LangGraph's tables (its WAL switch: a no-op)
        # WAL without an fsync per commit: a crash of this process loses nothing committed
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._write_lock = threading.Lock()

    def recorder(self) -> StepRecorder:
        """A recorder for one attempt's steps, to ``save`` here when the attempt ends."""
        return StepRecorder(self.path)

    def save(self, steps: StepRecorder, thread_id: str) -> int:
        """Write the steps recorded for ``thread_id`` in one transaction, replacing what the file held for that
        thread (an attempt run again after an interruption); returns how many checkpoints."""
        with self._write_lock:
            cur = self._conn.cursor()
            try:
                cur.execute("DELETE FROM checkpoints WHERE thread_id = ?", (thread_id,))
                cur.execute("DELETE FROM writes WHERE thread_id = ?", (thread_id,))
                for many, query, params in _merged(steps.statements):
                    (cur.executemany if many else cur.execute)(query, params)
                self._conn.commit()
            except BaseException:
                self._conn.rollback()
                raise
            finally:
                cur.close()
        return steps.steps

    def close(self) -> None:
        with self._write_lock:
            self._conn.close()

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _merged(statements: list[tuple[bool, str, Any]]) -> Iterator[tuple[bool, str, Any]]:
    """Consecutive statements with the same query as one ``executemany`` (the order of the rows is kept)."""
    query: str | None = None
    rows: list[Any] = []
    for many, q, params in statements:
        if q != query and rows:
            yield True, query, rows  # type: ignore[misc]
            rows = []
        query = q
        rows.extend(params if many else [params])
    if rows:
        yield True, query, rows  # type: ignore[misc]


class CheckpointStep(BaseModel):
    """One step of an attempt's graph run, as stored by the checkpointer."""

    step: int
    node: str | None  # the node whose writes produced this checkpoint (None for the input)
    next: list[str]
    checkpoint_id: str
    status: str | None = None
    round_index: int | None = None


def history(path: Path, thread_id: str) -> list[CheckpointStep]:
    """Every checkpoint of an attempt, oldest first: which node ran, what comes next."""
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        steps = []
        for tup in saver.list({"configurable": {"thread_id": thread_id}}):
            meta = tup.metadata or {}
            values = tup.checkpoint.get("channel_values", {})
            steps.append(CheckpointStep(
                step=int(meta.get("step", -1)),
                node=None,
                next=[k.split(":", 2)[-1] for k in values if k.startswith("branch:to:")],
                checkpoint_id=tup.checkpoint["id"],
                status=values.get("status"),
                round_index=values.get("round_index"),
            ))
        steps.sort(key=lambda s: s.step)
        # the node that produced a checkpoint is the one the previous checkpoint scheduled next
        for before, after in zip(steps, steps[1:]):
            after.node = before.next[0] if before.next else None
        return steps
    finally:
        conn.close()
