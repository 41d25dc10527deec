"""LangGraph checkpoints of every step of an attempt, in SQLite, so each step can be listed and forked.

An attempt's steps are checkpointed in memory while it runs and written to SQLite in one transaction when it
ends (also when it fails), in LangGraph's own ``SqliteSaver`` format: ``SqliteSaver`` (and ``history``) read
them back, and an agent graph with LangGraph's ``AsyncSqliteSaver`` (its model calls are coroutines, so it
runs with ``ainvoke``) resumes or forks from any of them. Writing per step instead would
cost a commit per node visit; an attempt cut off by SIGKILL is re-run on resume anyway (its LLM calls come
from the cache), so nothing the deferred write could have kept is lost.

One ``CheckpointStore`` file holds many attempts (thread id = attempt id).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel


class _BatchedSqliteSaver(SqliteSaver):
    """``SqliteSaver`` whose writes inside ``batch()`` commit once, at the end."""

    _batching = False

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        with super().cursor(transaction=transaction and not self._batching) as cur:
            yield cur


class CheckpointStore:
    """A SQLite file of LangGraph checkpoints shared by the attempts of an experiment (thread-safe)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout=30000")
        self._saver = _BatchedSqliteSaver(self._conn)
        self._saver.setup()
        # WAL without an fsync per commit: a crash of this process loses nothing committed
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._write_lock = threading.Lock()

    def save(self, memory: InMemorySaver, thread_id: str) -> int:
        """Write every checkpoint (and pending write) of ``thread_id`` kept by ``memory``, replacing what the
        file held for that thread (an attempt run again after an interruption); returns how many."""
        tuples = list(memory.list({"configurable": {"thread_id": thread_id}}))
        tuples.reverse()  # oldest first, so each parent is stored before its children
        with self._write_lock:
            self._saver._batching = True
            try:
                self._saver.delete_thread(thread_id)
                for item in tuples:
                    conf = item.config["configurable"]
                    parent = item.parent_config or {"configurable": {"thread_id": thread_id,
                                                                     "checkpoint_ns": conf.get("checkpoint_ns", "")}}
                    saved = self._saver.put(parent, item.checkpoint, item.metadata, {})
                    by_task: dict[str, list[tuple[str, Any]]] = {}
                    for task_id, channel, value in item.pending_writes or []:
                        by_task.setdefault(task_id, []).append((channel, value))
                    for task_id, writes in by_task.items():
                        self._saver.put_writes(saved, writes, task_id)
            finally:
                self._saver._batching = False
                with self._saver.lock:
                    self._conn.commit()
        return len(tuples)

    def close(self) -> None:
        with self._write_lock:
            self._conn.close()

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
