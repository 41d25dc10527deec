"""One SQLite checkpointer per attempt, so every step can be listed and forked (LangGraph ``SqliteSaver``)."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel


@contextmanager
def sqlite_checkpointer(path: Path) -> Iterator[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


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
    from langgraph.checkpoint.sqlite import SqliteSaver

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
