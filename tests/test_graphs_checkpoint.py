"""StepRecorder + CheckpointStore: an attempt's steps recorded in memory and saved in one transaction (one
multi-row statement per table) are the rows LangGraph's own SqliteSaver would have written while the graph ran,
and the rows its put / put_writes write for the same calls; a graph forks from any of them."""

from __future__ import annotations

import asyncio
import operator
import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from sysmo.graphs.checkpoint import (
    AlreadySerialised,
    CheckpointStore,
    StepRecorder,
    StepRouter,
    _OneTransaction,
    history,
)
from sysmo.graphs.checkpoint_texts import TextsSerializer


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    status: str


def graph_with(checkpointer: Any):
    graph = StateGraph(State)

    async def draft(state: State) -> dict[str, Any]:
        return {"log": ["draft"], "status": "running"}

    async def review(state: State) -> dict[str, Any]:
        return {"log": ["review"], "status": "passed"}

    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=checkpointer)


def rows(path: Path) -> tuple[list[tuple], list[tuple]]:
    """The stored rows without the ids (they are fresh uuids per run)."""
    with sqlite3.connect(path) as conn:
        checkpoints = conn.execute("SELECT thread_id, checkpoint_ns, type, metadata FROM checkpoints "
                                   "ORDER BY checkpoint_id").fetchall()
        writes = conn.execute("SELECT thread_id, task_path, idx, channel, type, value FROM writes "
                              "ORDER BY checkpoint_id, task_path, idx").fetchall()
    return checkpoints, writes


def test_recorded_steps_are_the_rows_sqlitesaver_writes(tmp_path: Path) -> None:
    config = {"configurable": {"thread_id": "t1"}}

    async def direct() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "direct.sqlite")) as saver:
            await graph_with(saver).ainvoke({"log": []}, config)

    asyncio.run(direct())
    recorder = StepRecorder()
    final = asyncio.run(graph_with(recorder).ainvoke({"log": []}, config))
    assert final == {"log": ["draft", "review"], "status": "passed"}
    with CheckpointStore(tmp_path / "recorded.sqlite") as store:
        assert store.save(recorder, "t1") == recorder.steps == 4  # input, start, draft, review
    direct_rows, recorded_rows = rows(tmp_path / "direct.sqlite"), rows(tmp_path / "recorded.sqlite")
    # the same rows; a large step is compressed (its type says so: graphs.checkpoint_texts)
    assert [(*r[:2], r[2].removesuffix("+zlib")) for r in recorded_rows[0]] == [r[:3] for r in direct_rows[0]]
    assert recorded_rows[1] == direct_rows[1]
    # read back with LangGraph's own saver (given sysmo's serializer), and through sysmo's history
    with SqliteSaver.from_conn_string(str(tmp_path / "recorded.sqlite")) as saver:
        saver.serde = TextsSerializer(path=tmp_path / "recorded.sqlite")
        latest = saver.get_tuple(config)
        assert latest is not None and latest.checkpoint["channel_values"]["status"] == "passed"
    assert [s.node for s in history(tmp_path / "recorded.sqlite", "t1")][-2:] == ["draft", "review"]


def all_rows(path: Path) -> tuple[list[tuple], list[tuple], list[tuple]]:
    with sqlite3.connect(path) as conn:
        return tuple(sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)  # type: ignore[return-value]
                     for table in ("checkpoints", "writes", "texts"))


def test_a_batch_writes_the_rows_sqlitesavers_put_and_put_writes_write(tmp_path: Path) -> None:
    """Every column of every row, ids and parents included: the batch's own statements against the saver's calls
    (``replay_into``) for the same recorded steps, several attempts, one of them stored before and given twice, a
    long text shared."""
    recorders = []
    for thread in ("a", "b", "c", "a"):
        recorder = StepRecorder()
        long_text = "x" * 300  # stored once, in the texts table
        asyncio.run(graph_with(recorder).ainvoke({"log": [long_text]}, {"configurable": {"thread_id": thread}}))
        recorders.append((recorder, thread))
    with CheckpointStore(tmp_path / "batch.sqlite") as store:
        store.save(recorders[0][0], "a")  # in the file already, and twice in the batch: its last steps stay
        assert store.save_many(recorders) == 16
    with CheckpointStore(tmp_path / "saver.sqlite"):  # LangGraph's tables, then its own saver's calls
        pass
    conn = sqlite3.connect(tmp_path / "saver.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn, serde=AlreadySerialised())
    for recorder, _ in recorders[1:]:
        for call in recorder.calls:
            conn.executemany("INSERT OR IGNORE INTO texts (digest, text) VALUES (?, ?)", call.texts.items())
        recorder.replay_into(saver)
    conn.commit()
    conn.close()
    batch, by_saver = all_rows(tmp_path / "batch.sqlite"), all_rows(tmp_path / "saver.sqlite")
    assert batch == by_saver and len(batch[0]) == 12 and len(batch[1]) > 0 and len(batch[2]) == 1
    assert {s.node for s in history(tmp_path / "batch.sqlite", "a")} >= {"draft", "review"}


def test_saving_again_replaces_a_threads_steps_and_keeps_the_others(tmp_path: Path) -> None:
    with CheckpointStore(tmp_path / "c.sqlite") as store:
        for thread in ("a", "b", "a"):
            recorder = StepRecorder()
            asyncio.run(graph_with(recorder).ainvoke({"log": []}, {"configurable": {"thread_id": thread}}))
            store.save(recorder, thread)
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        counts = dict(conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall())
    assert counts == {"a": 4, "b": 4}


def test_a_recorder_only_records(tmp_path: Path) -> None:
    recorder = StepRecorder()
    config = {"configurable": {"thread_id": "t"}}
    assert recorder.get_tuple(config) is None  # a fresh thread: the run starts from its input
    asyncio.run(graph_with(recorder).ainvoke({"log": []}, config))
    with pytest.raises(NotImplementedError, match="read them from the checkpoint file"):
        recorder.get_tuple(config)
    with pytest.raises(NotImplementedError):
        list(recorder.list(config))


def test_a_failed_save_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with CheckpointStore(tmp_path / "c.sqlite") as store:
        good = StepRecorder()
        asyncio.run(graph_with(good).ainvoke({"log": []}, {"configurable": {"thread_id": "a"}}))
        store.save(good, "a")
        saved = [s.checkpoint_id for s in history(tmp_path / "c.sqlite", "a")]
        again = StepRecorder()
        asyncio.run(graph_with(again).ainvoke({"log": []}, {"configurable": {"thread_id": "a"}}))
        real_execute = _OneTransaction.execute
        calls = []

        def write_then_fail(self: _OneTransaction, *args: Any) -> Any:  # the disk fills up in the second statement
            calls.append(1)
            if len(calls) > 1:  # the steps' checkpoints are written, their writes not
                raise sqlite3.OperationalError("database or disk is full")
            return real_execute(self, *args)

        monkeypatch.setattr(_OneTransaction, "execute", write_then_fail)
        with pytest.raises(sqlite3.OperationalError, match="disk is full"):
            store.save(again, "a")
    assert len(saved) == 4 and [s.checkpoint_id for s in history(tmp_path / "c.sqlite", "a")] == saved


def test_a_graph_forks_from_a_saved_step(tmp_path: Path) -> None:
    recorder = StepRecorder()
    asyncio.run(graph_with(recorder).ainvoke({"log": []}, {"configurable": {"thread_id": "t"}}))
    with CheckpointStore(tmp_path / "c.sqlite") as store:
        store.save(recorder, "t")
    after_draft = next(s for s in history(tmp_path / "c.sqlite", "t") if s.node == "draft")
    assert after_draft.next == ["review"] and after_draft.status == "running"

    async def fork() -> dict[str, Any]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
            saver.serde = TextsSerializer(path=tmp_path / "c.sqlite")  # compressed steps are read back
            config = {"configurable": {"thread_id": "t", "checkpoint_id": after_draft.checkpoint_id}}
            return await graph_with(saver).ainvoke(None, config)

    assert asyncio.run(fork()) == {"log": ["draft", "review"], "status": "passed"}  # review ran again from there
    steps = history(tmp_path / "c.sqlite", "t")
    assert len(steps) == 6 and steps[-1].node == "review"  # the fork's steps joined the thread
    # the step forked from: its own child (review), and LangGraph's copy of it that the fork resumed
    assert next(s for s in steps if s.checkpoint_id == after_draft.checkpoint_id).next == ["review", "fork"]


def test_a_router_sends_each_attempts_steps_to_its_own_recorder(tmp_path: Path) -> None:
    # one compiled graph for every attempt of a process: its checkpointer routes by thread id
    router = StepRouter()
    graph = graph_with(router)
    recorders = {thread: StepRecorder() for thread in ("a", "b")}

    async def both() -> None:
        async def one(thread: str) -> None:
            with router.recording(thread, recorders[thread]):
                await graph.ainvoke({"log": []}, {"configurable": {"thread_id": thread}})

        await asyncio.gather(one("a"), one("b"))

    asyncio.run(both())
    alone = StepRecorder()
    asyncio.run(graph_with(alone).ainvoke({"log": []}, {"configurable": {"thread_id": "a"}}))
    with CheckpointStore(tmp_path / "routed.sqlite") as store:
        assert store.save(recorders["a"], "a") == store.save(recorders["b"], "b") == 4
    with CheckpointStore(tmp_path / "alone.sqlite") as store:
        store.save(alone, "a")
    routed, own = rows(tmp_path / "routed.sqlite"), rows(tmp_path / "alone.sqlite")
    assert [r[:3] for r in routed[0] if r[0] == "a"] == [r[:3] for r in own[0]]
    assert [r for r in routed[1] if r[0] == "a"] == own[1]
    with pytest.raises(RuntimeError, match="no recorder for thread 'c'"):
        asyncio.run(graph.ainvoke({"log": []}, {"configurable": {"thread_id": "c"}}))
