"""LangGraph checkpoints of every step of an attempt, in SQLite, so each step can be listed and forked.

An attempt's steps are checkpointed in memory while it runs (``StepRecorder``, a ``BaseCheckpointSaver`` of its
own, serialising each checkpoint and write as it comes) and written to SQLite when it ends (also when it
fails), in LangGraph's ``SqliteSaver`` tables: ``SqliteSaver`` (and ``history``) read them back given a
``TextsSerializer`` (long texts are stored once per file, ``graphs.checkpoint_texts``), and an agent graph with
LangGraph's ``AsyncSqliteSaver`` (its model calls are coroutines, so it runs with ``ainvoke``) resumes or forks
from any of them. The values are serialised once, when recorded.

``CheckpointStore.save_many`` writes the steps of many attempts in one transaction (the runner's writer
thread batches finished attempts), each table's rows in multi-row statements: the rows ``SqliteSaver.put`` /
``put_writes`` write (``checkpoint_row``, ``write_rows``: the same columns, metadata and statements, pinned by
tests/test_graphs_checkpoint.py against the saver itself), without a saver call per step (each merged the
metadata, took the saver's lock and ran a statement; nine per attempt of a three-node graph). Writing per step
instead would cost a commit per node visit; an attempt cut off by SIGKILL is re-run on resume anyway (its LLM
calls come from the cache), so nothing the deferred write could have kept is lost. The runner writes an
attempt's steps before its record, so a stored attempt has its steps.

One ``CheckpointStore`` file holds many attempts (thread id = attempt id).
"""

from __future__ import annotations

import inspect
import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from sysmo.graphs.checkpoint_texts import TEXTS_TABLE, TextsSerializer, write_texts
from sysmo.sqlite_setup import WrittenKeys, insert_rows, max_variables, set_up_shared


def _reserved(name: str) -> bool:
    """LangGraph's own pseudo-nodes (``__input__``, ``__start__``, ``__interrupt__``): not steps of the agent's graph."""
    return name.startswith("__") and name.endswith("__")


@dataclass
class _Put:
    config: RunnableConfig
    checkpoint: tuple[str, bytes]  # serialised when recorded: later changes to the state cannot reach it
    metadata: CheckpointMetadata
    checkpoint_id: str
    new_versions: ChannelVersions  # what a saver that stores channels apart (InMemorySaver) needs
    texts: dict[str, str] = field(default_factory=dict)  # long texts first seen here (graphs.checkpoint_texts)


@dataclass
class _PutWrites:
    config: RunnableConfig
    writes: list[tuple[str, tuple[str, bytes]]]  # (channel, serialised value)
    task_id: str
    task_path: str
    texts: dict[str, str] = field(default_factory=dict)  # long texts first seen here (graphs.checkpoint_texts)


class _RecordedTexts(Mapping[str, str]):
    """The long texts of a recorder's calls (each call carries those it introduced, so they travel with the
    calls, e.g. from a Ray worker to the driver)."""

    def __init__(self, recorder: StepRecorder) -> None:
        self.recorder = recorder

    def __getitem__(self, key: str) -> str:
        for call in self.recorder.calls:
            if key in call.texts:
                return call.texts[key]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter({key for call in self.recorder.calls for key in call.texts})

    def __len__(self) -> int:
        return len(set(self))


class _InMemorySaver(BaseCheckpointSaver[str]):
    """What the in-memory savers below share: the async interface answered by their sync methods (nothing
    they do waits), and channel versions in the format of the SQLite saver that will hold them (a fork
    continues them)."""

    def get_next_version(self, current: str | None, channel: None) -> str:
        return SqliteSaver.get_next_version(self, current, channel)  # type: ignore[arg-type]

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        self.put_writes(config, writes, task_id, task_path)


class StepRecorder(_InMemorySaver):
    """The checkpointer of one running attempt: every ``put`` / ``put_writes`` LangGraph makes is kept in memory,
    serialised as it comes, for ``CheckpointStore.save`` to hand to a ``SqliteSaver`` in one transaction.

    It only records: an attempt starts a fresh thread, so there is nothing to read back during the run (read
    the steps from the file afterwards, with ``history`` or a ``SqliteSaver``). ``destination`` names the file
    the steps are meant for (``CheckpointStore.recorder``)."""

    def __init__(self, destination: Path | None = None) -> None:
        # not ``BaseCheckpointSaver.__init__``: it only sets ``serde``, checking it against a runtime Protocol (slow,
        # and a recorder is made per attempt); the class's default is LangGraph's (typed) JsonPlusSerializer
        self.destination = destination
        self.calls: list[_Put | _PutWrites] = []  # in the order LangGraph made them
        # long texts of the recorded values are swapped out (into ``_found``, then onto the call that holds them)
        # and stored once in the file (graphs.checkpoint_texts)
        self._found: dict[str, str] = {}
        self.serde = TextsSerializer(collect=self._found, texts=_RecordedTexts(self))

    @property
    def steps(self) -> int:
        """How many checkpoints were recorded."""
        return sum(isinstance(c, _Put) for c in self.calls)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if self.calls:
            raise NotImplementedError("a StepRecorder only records an attempt's steps; read them from the "
                                      "checkpoint file once it is saved (graphs.checkpoint.history, SqliteSaver)")
        return None  # a fresh thread: the run starts from its input

    def list(self, *args: Any, **kwargs: Any) -> Iterator[CheckpointTuple]:
        raise NotImplementedError("a StepRecorder only records; list the steps from the checkpoint file once saved")

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        configurable = config["configurable"]
        typed = self.serde.dumps_typed(checkpoint)
        self.calls.append(_Put({"configurable": dict(configurable)}, typed, metadata, checkpoint["id"],
                               dict(new_versions), self._take_found()))
        return {"configurable": {"thread_id": configurable["thread_id"],
                                 "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                                 "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        typed = [(channel, self.serde.dumps_typed(value)) for channel, value in writes]
        self.calls.append(_PutWrites({"configurable": dict(config["configurable"])}, typed, task_id, task_path,
                                     self._take_found()))

    def _take_found(self) -> dict[str, str]:
        if not self._found:
            return {}
        found = dict(self._found)
        self._found.clear()
        return found

    @property
    def texts(self) -> dict[str, str]:
        """The long texts the recorded calls refer to (digest -> text)."""
        return dict(_RecordedTexts(self).items())


    def replay_into(self, saver: BaseCheckpointSaver) -> None:
        """Make the recorded calls on ``saver``, in order. A saver built with ``AlreadySerialised(...)`` as its
        serializer writes the recorded bytes as they are; any other saver gets the values deserialised."""
        passing = isinstance(saver.serde, AlreadySerialised)
        for call in self.calls:
            if isinstance(call, _Put):
                checkpoint = (_RecordedCheckpoint(call.checkpoint_id, call.checkpoint, self.serde) if passing
                              else self.serde.loads_typed(call.checkpoint))
                saver.put(call.config, checkpoint, call.metadata, call.new_versions)
            else:
                writes = [(ch, _Serialised(v) if passing else self.serde.loads_typed(v)) for ch, v in call.writes]
                saver.put_writes(call.config, writes, call.task_id, call.task_path)


class StepRouter(_InMemorySaver):
    """One checkpointer for all the attempts a process runs at once: each ``put`` / ``put_writes`` goes to the
    ``StepRecorder`` registered for its thread id (the attempt's id) with ``recording``. One compiled graph
    with a router serves every attempt, where a recorder of its own would need a copy of the graph per attempt
    (``graph.copy``, about 0.1 ms each)."""

    def __init__(self) -> None:
        super().__init__()
        self._recorders: dict[str, StepRecorder] = {}

    @contextmanager
    def recording(self, thread_id: str, recorder: StepRecorder) -> Iterator[StepRecorder]:
        """Send ``thread_id``'s steps to ``recorder`` while the block runs (one attempt's graph run)."""
        if self._recorders.setdefault(thread_id, recorder) is not recorder:
            raise RuntimeError(f"thread {thread_id!r} is already being recorded")
        try:
            yield recorder
        finally:
            del self._recorders[thread_id]

    def _recorder(self, config: RunnableConfig) -> StepRecorder:
        thread_id = config["configurable"]["thread_id"]
        try:
            return self._recorders[thread_id]
        except KeyError:
            raise RuntimeError(f"no recorder for thread {thread_id!r}: run the graph inside "
                               f"StepRouter.recording") from None

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._recorder(config).get_tuple(config)

    def list(self, *args: Any, **kwargs: Any) -> Iterator[CheckpointTuple]:
        raise NotImplementedError("a StepRouter only records; list the steps from the checkpoint file once saved")

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        return self._recorder(config).put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        self._recorder(config).put_writes(config, writes, task_id, task_path)


# LangGraph reads the signature of a saver's ``(a)put_writes`` (does it take ``task_path``?) at the start of every
# graph run, i.e. of every attempt; computed once here, Python's ``inspect`` answers from ``__signature__``
for _method in (StepRecorder.put_writes, StepRouter.put_writes, _InMemorySaver.aput_writes):
    _method.__signature__ = inspect.signature(_method)  # type: ignore[attr-defined]


class _Serialised:
    """A value the recorder serialised already, on its way to a saver whose serializer passes it through."""

    __slots__ = ("typed",)

    def __init__(self, typed: tuple[str, bytes]) -> None:
        self.typed = typed


class _RecordedCheckpoint(dict):
    """A recorded checkpoint handed to a saver's ``put``: its ``id`` at once (what ``SqliteSaver.put`` reads
    besides serialising it), the serialised bytes for the serializer, and, should a saver read any other
    field, the whole checkpoint deserialised on first access (so it is correct for any saver, fast for this
    one)."""

    def __init__(self, checkpoint_id: str, typed: tuple[str, bytes], serde: SerializerProtocol) -> None:
        super().__init__(id=checkpoint_id)
        self.typed, self._serde, self._loaded = typed, serde, False

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            super().update(self._serde.loads_typed(self.typed))

    def __missing__(self, key: str) -> Any:
        self._load()
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key != "id":
            self._load()
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if key != "id":
            self._load()
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        self._load()
        return super().__iter__()

    def __len__(self) -> int:
        self._load()
        return super().__len__()

    def keys(self):  # type: ignore[override]
        self._load()
        return super().keys()

    def items(self):  # type: ignore[override]
        self._load()
        return super().items()

    def values(self):  # type: ignore[override]
        self._load()
        return super().values()

    def copy(self) -> dict[str, Any]:  # type: ignore[override]
        self._load()
        return dict(super().items())


class AlreadySerialised(SerializerProtocol):
    """The serializer of a saver that writes recorded steps: what the recorder serialised (``_Serialised``,
    ``_RecordedCheckpoint``) is written as it is; anything else goes through ``inner`` (LangGraph's default)."""

    def __init__(self, inner: SerializerProtocol | None = None) -> None:
        self.inner = inner or JsonPlusSerializer()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if isinstance(obj, (_Serialised, _RecordedCheckpoint)):
            return obj.typed
        return self.inner.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.inner.loads_typed(data)


class _OneTransaction(sqlite3.Connection):
    """A connection whose ``commit`` waits while ``held``: a saver's per-call commits become one transaction."""

    held = False

    def commit(self) -> None:
        if not self.held:
            super().commit()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.held = True
        try:
            yield
        except BaseException:
            self.held = False
            self.rollback()
            raise
        self.held = False
        self.commit()


# LangGraph's ``SqliteSaver`` statements (``put``, and ``put_writes``: a write to one of its special channels,
# an error or an interrupt, replaces the row, any other is kept when there already), followed by a row's values
# per row (``sqlite_setup.insert_rows``)
CHECKPOINT_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
WRITE_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value"
INSERT_CHECKPOINTS = f"INSERT OR REPLACE INTO checkpoints ({CHECKPOINT_COLUMNS}) VALUES "
REPLACE_WRITES = f"INSERT OR REPLACE INTO writes ({WRITE_COLUMNS}) VALUES "
KEEP_WRITES = f"INSERT OR IGNORE INTO writes ({WRITE_COLUMNS}) VALUES "


def checkpoint_row(call: _Put) -> tuple:
    """The ``checkpoints`` row ``SqliteSaver.put`` writes for a recorded checkpoint."""
    configurable = call.config["configurable"]
    kind, data = call.checkpoint
    metadata = json.dumps(get_checkpoint_metadata(call.config, call.metadata), ensure_ascii=False)
    return (str(configurable["thread_id"]), configurable["checkpoint_ns"], call.checkpoint_id,
            configurable.get("checkpoint_id"), kind, data, metadata.encode("utf-8", "ignore"))


def write_rows(call: _PutWrites) -> tuple[str, list[tuple]]:
    """The statement and ``writes`` rows ``SqliteSaver.put_writes`` writes for a recorded call."""
    configurable = call.config["configurable"]
    key = (str(configurable["thread_id"]), str(configurable["checkpoint_ns"]), str(configurable["checkpoint_id"]),
           call.task_id, call.task_path)
    statement = REPLACE_WRITES if all(channel in WRITES_IDX_MAP for channel, _ in call.writes) else KEEP_WRITES
    return statement, [(*key, WRITES_IDX_MAP.get(channel, idx), channel, *typed)
                       for idx, (channel, typed) in enumerate(call.writes)]


class CheckpointStore:
    """A SQLite file of LangGraph checkpoints shared by the attempts of an experiment (thread-safe)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # threads with steps to replace: the others need no ``delete_thread`` (two statements per attempt less)
        self._written = WrittenKeys(self.path)
        self._conn: _OneTransaction = sqlite3.connect(str(self.path), check_same_thread=False,
                                                      factory=_OneTransaction)
        self._conn.execute("PRAGMA busy_timeout=30000")
        # the recorded bytes are written as they are (serialised once, when the step was recorded)
        self._saver = SqliteSaver(self._conn, serde=AlreadySerialised())
        self._max_variables = max_variables(self._conn)
        set_up_shared(self._conn, self._create_tables)
        # WAL without an fsync per commit: a crash of this process loses nothing committed
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._write_lock = threading.Lock()

    def _create_tables(self) -> None:
        self._saver.setup()  # LangGraph's tables (its WAL switch: a no-op)
        self._conn.execute(TEXTS_TABLE)  # the steps' long texts, each once (checkpoint_texts)
        self._conn.commit()

    def recorder(self) -> StepRecorder:
        """A recorder for one attempt's steps, to ``save`` here when the attempt ends."""
        return StepRecorder(self.path)

    def save(self, steps: StepRecorder, thread_id: str) -> int:
        """Write the steps recorded for ``thread_id`` in one transaction, replacing what the file held for that
        thread (an attempt run again after an interruption); returns how many checkpoints."""
        return self.save_many([(steps, thread_id)])

    def save_many(self, items: Sequence[tuple[StepRecorder, str]]) -> int:
        """``save`` for several attempts (recorder, thread id) in one transaction: all or none of them are
        written (a thread given twice keeps its last steps). Returns how many checkpoints."""
        latest = {thread_id: steps for steps, thread_id in items}
        texts: dict[str, str] = {}
        checkpoints: list[tuple] = []
        writes: list[tuple[str, list[tuple]]] = []  # (statement, rows): runs of calls with the same statement
        for steps in latest.values():
            for call in steps.calls:
                if call.texts:
                    texts.update(call.texts)
                if isinstance(call, _Put):
                    checkpoints.append(checkpoint_row(call))
                else:
                    statement, rows = write_rows(call)
                    if writes and writes[-1][0] == statement:
                        writes[-1][1].extend(rows)
                    else:
                        writes.append((statement, rows))
        with self._write_lock:
            with self._conn.transaction():
                for thread_id in latest:
                    if self._written.may_hold(thread_id):
                        self._saver.delete_thread(thread_id)
                write_texts(self._conn, texts)
                insert_rows(self._conn, INSERT_CHECKPOINTS, checkpoints, width=7, limit=self._max_variables)
                for statement, rows in writes:
                    insert_rows(self._conn, statement, rows, width=9, limit=self._max_variables)
            self._written.add(latest)
        return sum(steps.steps for steps, _ in items)

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
    source: str | None = None  # LangGraph's: input, loop, update (``update_state``: a fork's changes), fork


# the node names ``history`` gives a checkpoint written by ``(a)update_state``, and the copy LangGraph writes when a
# run resumes a checkpoint that is not its thread's latest
UPDATE_STATE = "update_state"
FORK_COPY = "fork"


def checkpoint_tuples(path: Path, thread_id: str, read_only: bool = False) -> list[Any]:
    """LangGraph's checkpoint tuples of one attempt (thread) in a checkpoint file, newest first, long texts put back
    from the file's texts table (``read_only``: the file is opened read-only, for a viewer)."""
    uri = f"file:{path}?mode=ro" if read_only else str(path)
    conn = sqlite3.connect(uri, uri=read_only, check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=TextsSerializer(path=path))
        return list(saver.list({"configurable": {"thread_id": thread_id}}))
    finally:
        conn.close()


def history(path: Path, thread_id: str) -> list[CheckpointStep]:
    """Every checkpoint of an attempt, oldest first (forks included): which node ran, what comes next.

    The node that produced a checkpoint is the one whose ``versions_seen`` (the channel versions each node has
    read, a field of LangGraph's ``Checkpoint``) changed from its parent checkpoint; ``update_state`` for one
    that ``(a)update_state`` wrote (a fork's changes), ``fork`` for LangGraph's copy of a resumed one; ``next`` holds the nodes of its children (empty for the
    last one)."""
    tuples = checkpoint_tuples(path, thread_id)
    by_id = {t.checkpoint["id"]: t for t in tuples}
    steps: dict[str, CheckpointStep] = {}
    children: dict[str, list[str]] = {}
    for tup in tuples:
        parent_id = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        parent = by_id.get(parent_id) if parent_id else None
        seen = tup.checkpoint.get("versions_seen", {})
        seen_before = parent.checkpoint.get("versions_seen", {}) if parent else {}
        ran = [n for n, versions in seen.items() if not _reserved(n) and seen_before.get(n) != versions]
        values = tup.checkpoint.get("channel_values", {})
        source = (tup.metadata or {}).get("source")
        node = ran[0] if ran else {"update": UPDATE_STATE, "fork": FORK_COPY}.get(source or "")
        steps[tup.checkpoint["id"]] = CheckpointStep(
            step=int((tup.metadata or {}).get("step", -1)), node=node, next=[], source=source,
            checkpoint_id=tup.checkpoint["id"], status=values.get("status"), round_index=values.get("round_index"))
        if parent_id:
            children.setdefault(parent_id, []).append(tup.checkpoint["id"])
    for parent_id, kids in children.items():
        if parent_id in steps:
            nodes = [steps[k].node for k in sorted(kids)]
            steps[parent_id].next = list(dict.fromkeys(n for n in nodes if n))
    return sorted(steps.values(), key=lambda s: (s.step, s.checkpoint_id))  # ids are time-ordered (uuid6)
