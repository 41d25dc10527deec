"""Batched writes: many attempts written in one transaction (results.sqlite, checkpoints.sqlite) are the rows
written one at a time; a failed batch writes nothing; the recorder's bytes reach the file as they are; the
writer thread reports an attempt stored only once it is committed, so what it reported survives a SIGKILL and
is never written twice."""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import operator
import os
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from sysmo.contracts.artifact import Artifact
from sysmo.contracts.attempt import Attempt, AttemptStatus, LLMCallSummary, Round
from sysmo.contracts.check import CheckResult, Outcome
from sysmo.contracts.events import GraphStepEvent, LLMCallEvent, ScoreStageEvent, ToolCallEvent
from sysmo.contracts.scorecard import ScoreCard
from sysmo.graphs.checkpoint import AlreadySerialised, CheckpointStore, StepRecorder
from sysmo.store import AttemptRecord, Store

META = {"benchmark": "starter", "kind": "uml_class", "domain": "library", "difficulty": 1}
TABLES = {"attempts": "id", "rounds": "attempt_id, idx", "llm_calls": "attempt_id, round_idx, seq",
          "tool_calls": "attempt_id, round_idx", "events": "attempt_id, seq", "scores": "attempt_id",
          "score_metrics": "attempt_id, metric"}


def attempt_of(n: int, rounds: int = 2) -> Attempt:
    """An attempt with every kind of row: rounds, their calls and checks, a call outside rounds, events."""
    made = []
    for index in range(rounds):
        passed = index == rounds - 1
        made.append(Round(index=index, kind="generate" if index == 0 else "repair",
                          messages=[{"role": "user", "content": f"model the library, try {index}"}],
                          response=f"```plantuml\nclass Book{n}_{index}\n```",
                          llm_calls=[LLMCallSummary(model="m", prompt_tokens=10 + n, completion_tokens=5,
                                                    cost_usd=0.01, spend_usd=0.01, request_hash=f"h{n}.{index}",
                                                    purpose="generate")],
                          artifact=Artifact(language="plantuml", files={"model.puml": f"class Book{n}_{index}"}),
                          check=CheckResult(tool="plantuml", tool_version="1", outcome=Outcome.OK if passed
                                            else Outcome.FAILED),
                          duration_s=0.5, llm_time_s=0.2, tool_time_s=0.1))
    attempt = Attempt(id=f"a{n:04d}", task_id=f"starter/uml_class/t{n % 3}", agent="base_modeling", model="m",
                      sample_index=n, status=AttemptStatus.PASSED, rounds=made, final_artifact=made[-1].artifact,
                      calls_outside_rounds=[LLMCallSummary(model="m", prompt_tokens=3, request_hash=f"x{n}")],
                      duration_s=1.0 + n)
    attempt.events = [LLMCallEvent(seq=0, role="generator", model="m", provider="p", request_hash=f"h{n}.0",
                                   messages=made[0].messages, response={"text": made[0].response}),
                      ToolCallEvent(seq=1, tool="plantuml", outcome="failed"),
                      GraphStepEvent(seq=2, step=0, node="generate", keys=["response"])]
    return attempt


def dump(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows in a stable order, without the time they were written."""
    with sqlite3.connect(path) as conn:
        tables = {table: conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
                  for table, order in TABLES.items()}
        names = [r[1] for r in conn.execute("PRAGMA table_info(attempts)")]
    finished_at = names.index("finished_at")
    tables["attempts"] = [row[:finished_at] + row[finished_at + 1:] for row in tables["attempts"]]
    tables["scores"] = [row[:4] for row in tables["scores"]]  # without scored_at
    return tables


def card_of(n: int) -> ScoreCard:
    from sysmo.contracts.scorecard import StageResult

    return ScoreCard(task_id=f"t{n}", cascade="uml_class", stages=[StageResult(stage="syntax", value=1.0)])


def test_a_batch_writes_the_rows_of_one_attempt_at_a_time(tmp_path: Path) -> None:
    attempts = [attempt_of(n, rounds=1 + n % 3) for n in range(5)]
    scoring = [ScoreStageEvent(name="syntax", outcome="ok")]
    one = Store(tmp_path / "one.sqlite")
    for attempt in attempts:
        one.save_attempt("exp", attempt, META)
        one.save_score("exp", attempt.id, card_of(0), scoring)
    one.close()
    many = Store(tmp_path / "many.sqlite")
    with many.transaction():
        many.save_attempts("exp", [AttemptRecord.of(a, META) for a in attempts])
        many.save_scores("exp", [(a.id, card_of(0), scoring) for a in attempts])
    assert many.attempt("a0002").events[2].node == "generate"
    many.close()
    small = Store(tmp_path / "small.sqlite")
    small._max_variables = 40  # a statement of at most 40 parameters: the batch is cut into several
    small.save_attempts("exp", [AttemptRecord.of(a, META) for a in attempts])
    small.save_scores("exp", [(a.id, card_of(0), scoring) for a in attempts])
    small.close()
    expected = dump(tmp_path / "one.sqlite")
    assert expected == dump(tmp_path / "many.sqlite") == dump(tmp_path / "small.sqlite")
    assert len(expected["attempts"]) == 5 and len(expected["llm_calls"]) == sum(len(a.rounds) + 1 for a in attempts)


def test_writing_an_attempt_again_replaces_its_rows(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.sqlite")
    store.save_attempts("exp", [AttemptRecord.of(attempt_of(n, rounds=3), META) for n in range(3)])
    store.save_attempts("exp", [AttemptRecord.of(attempt_of(1, rounds=1), META)])  # run again after a kill
    rows = dump(tmp_path / "r.sqlite")
    store.close()
    assert [r[0] for r in rows["attempts"]] == ["a0000", "a0001", "a0002"]
    assert [r[:2] for r in rows["rounds"] if r[0] == "a0001"] == [("a0001", 0)]
    assert len([r for r in rows["llm_calls"] if r[0] == "a0001"]) == 2  # its round's call and the outside one
    assert len([r for r in rows["events"] if r[0] == "a0001"]) == 3
    # a file that was there (a resumed run): any attempt may have rows to replace; twice in a batch: the last
    again = Store(tmp_path / "r.sqlite")
    again.save_attempts("exp", [AttemptRecord.of(attempt_of(2, rounds=3), META),
                                AttemptRecord.of(attempt_of(2, rounds=1), META)])
    rows = dump(tmp_path / "r.sqlite")
    again.close()
    assert [r[:2] for r in rows["rounds"] if r[0] == "a0002"] == [("a0002", 0)]
    assert len([r for r in rows["events"] if r[0] == "a0002"]) == 3


def test_a_failed_batch_writes_none_of_its_attempts(tmp_path: Path) -> None:
    store = Store(tmp_path / "f.sqlite")
    store.save_attempt("exp", attempt_of(0), META)
    before = dump(tmp_path / "f.sqlite")
    broken = AttemptRecord.of(attempt_of(2), META)
    broken.events.append(broken.events[0])  # the same (attempt, seq) twice: the events table refuses it
    with pytest.raises(sqlite3.IntegrityError):
        store.save_attempts("exp", [AttemptRecord.of(attempt_of(1), META), broken])
    assert dump(tmp_path / "f.sqlite") == before
    store.close()


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


@functools.cache
def small_graph() -> Any:
    graph = StateGraph(Log)
    graph.add_node("draft", lambda state: {"log": ["draft"]})
    graph.add_node("review", lambda state: {"log": ["review"]})
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    return graph.compile()


def recorded(thread: str) -> StepRecorder:
    """The steps of a small graph run (input, start, two nodes), recorded in memory."""
    recorder = StepRecorder()
    graph = small_graph().copy({"checkpointer": recorder})
    asyncio.run(graph.ainvoke({"log": []}, {"configurable": {"thread_id": thread}}))
    return recorder


def checkpoint_rows(path: Path) -> tuple[list[tuple], list[tuple]]:
    with sqlite3.connect(path) as conn:
        return (conn.execute("SELECT * FROM checkpoints ORDER BY thread_id, checkpoint_id").fetchall(),
                conn.execute("SELECT * FROM writes ORDER BY thread_id, checkpoint_id, task_id, idx").fetchall())


def test_steps_of_many_attempts_in_one_transaction_are_the_recorders_bytes(tmp_path: Path) -> None:
    recorders = [(recorded(f"t{n}"), f"t{n}") for n in range(3)]
    with CheckpointStore(tmp_path / "one.sqlite") as store:
        for steps, thread in recorders:
            store.save(steps, thread)
    with CheckpointStore(tmp_path / "many.sqlite") as store:
        assert store.save_many(recorders) == 12
    checkpoints, writes = checkpoint_rows(tmp_path / "many.sqlite")
    assert (checkpoints, writes) == checkpoint_rows(tmp_path / "one.sqlite")
    # serialised once: the stored blobs are the bytes the recorder made while the graph ran
    made = {call.checkpoint_id: call.checkpoint for steps, _ in recorders for call in steps.calls
            if hasattr(call, "checkpoint_id")}
    assert {row[2]: (row[4], row[5]) for row in checkpoints} == made


def test_a_saver_that_reads_more_of_a_checkpoint_gets_all_of_it() -> None:
    # InMemorySaver.put reads the checkpoint's channel values and versions: the recorded checkpoint it is
    # handed deserialises itself, so what it keeps equals what it keeps from the real checkpoints
    steps = recorded("t")
    passed, plain = InMemorySaver(serde=AlreadySerialised()), InMemorySaver()
    steps.replay_into(passed)
    steps.replay_into(plain)
    config = {"configurable": {"thread_id": "t"}}
    assert [t.checkpoint for t in passed.list(config)] == [t.checkpoint for t in plain.list(config)]
    assert next(iter(passed.list(config))).checkpoint["channel_values"]["log"] == ["draft", "review"]


def writer_for(tmp_path: Path):
    from sysmo.runner import ExperimentConfig, UnitRunner
    from sysmo.runner.budget import Spending
    from sysmo.runner.results import ResultWriter
    from sysmo.runner.summary import RunSummary

    runner = UnitRunner(ExperimentConfig(id="exp", output_dir=tmp_path, agents=["base_modeling"], models=["m"]),
                        tmp_path / "exp")
    store = Store(tmp_path / "exp" / "results.sqlite")
    return ResultWriter(runner, store, "exp", Spending(), RunSummary("exp", tmp_path), wait_for_tools=False)


def unit_for(attempt: Attempt) -> Any:
    from agent_tasks import text_task
    from sysmo.contracts.task import TaskKind
    from sysmo.runner.units import WorkUnit

    return WorkUnit(text_task(TaskKind.UML_CLASS), attempt.agent, attempt.model, attempt.sample_index, "exp")


def test_the_writer_batches_what_queued_and_reports_an_attempt_once_committed(tmp_path: Path,
                                                                             monkeypatch) -> None:
    from sysmo.runner.results import BATCH, ResultWriter

    writer = writer_for(tmp_path)
    release, sizes = threading.Event(), []
    write_batch = ResultWriter.write_batch

    def held_write(self, batch):  # the first batch waits until everything is queued
        release.wait(10)
        sizes.append(len(batch))
        write_batch(self, batch)

    monkeypatch.setattr(ResultWriter, "write_batch", held_write)
    seen_committed: list[bool] = []

    def on_stored(attempt_id: str):
        def check(future) -> None:  # the attempt is in the file when its future is done
            with sqlite3.connect(tmp_path / "exp" / "results.sqlite") as conn:
                seen_committed.append(conn.execute("SELECT 1 FROM attempts WHERE id=?",
                                                   (attempt_id,)).fetchone() is not None)
        return check

    attempts = [attempt_of(n) for n in range(BATCH + 10)]
    steps = {attempt.id: recorded(attempt.id) for attempt in attempts}
    unit = unit_for(attempts[0])
    futures = []
    for attempt in attempts:
        futures.append(writer.keep(unit, attempt, steps[attempt.id]))
        futures[-1].add_done_callback(on_stored(attempt.id))
    release.set()
    for future in futures:
        future.result(timeout=30)
    writer.close()
    assert sum(sizes) == len(attempts) and len(sizes) <= 3 and max(sizes) == BATCH  # held: the rest queued
    assert seen_committed == [True] * len(attempts)
    assert writer.times.batches == len(sizes) and writer.times.attempts == len(attempts)
    assert (tmp_path / "exp" / "artifacts" / "a0003" / "round1" / "model.puml").read_text() == "class Book3_1"
    with sqlite3.connect(tmp_path / "exp" / "checkpoints.sqlite") as conn:
        assert conn.execute("SELECT COUNT(DISTINCT thread_id) FROM checkpoints").fetchone()[0] == len(attempts)
    writer.store.close()
    writer.runner.close()


def _write_until_killed(directory: str, reported: Any) -> None:
    writer = writer_for(Path(directory))
    unit = unit_for(attempt_of(0))
    for n in range(100_000):
        attempt = attempt_of(n)
        future = writer.keep(unit, attempt, recorded(attempt.id))
        future.add_done_callback(lambda f, i=attempt.id: reported.send(i))


def test_what_the_writer_reported_stored_survives_a_sigkill(tmp_path: Path) -> None:
    receiving, reporting = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_write_until_killed, args=(str(tmp_path), reporting))
    child.start()
    reported: list[str] = []
    while len(reported) < 150:
        assert receiving.poll(60), "the writer reported nothing for a minute"
        reported.append(receiving.recv())
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    while receiving.poll(0):
        reported.append(receiving.recv())
    store = Store(tmp_path / "exp" / "results.sqlite")
    stored = {r["id"] for r in store.query("SELECT id FROM attempts")}
    assert set(reported) <= stored  # nothing reported stored is lost
    for attempt_id in reported[:: 25]:
        assert store.attempt(attempt_id).rounds[1].check.ok
        assert len(store.events(attempt_id)) == 3  # each event once
    store.close()
    with sqlite3.connect(tmp_path / "exp" / "checkpoints.sqlite") as conn:
        with_steps = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert stored <= with_steps  # every attempt on record has its steps


def test_an_attempt_written_again_has_only_its_new_steps(tmp_path: Path) -> None:
    # a file that had no steps when opened skips delete_thread for new threads; a thread written before (in
    # this process, in this batch, or in the file when it was opened: a resumed run) is still replaced
    path = tmp_path / "c.sqlite"

    def counts() -> dict[str, int]:
        with sqlite3.connect(path) as conn:
            return dict(conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall())

    with CheckpointStore(path) as store:
        store.save_many([(recorded("a"), "a"), (recorded("a"), "a"), (recorded("b"), "b")])
        store.save(recorded("b"), "b")
    assert counts() == {"a": 4, "b": 4}
    with CheckpointStore(path) as store:  # resumed: the file has steps already
        store.save(recorded("a"), "a")
        store.save(recorded("c"), "c")
    assert counts() == {"a": 4, "b": 4, "c": 4}


def test_an_attempt_whose_executor_gave_up_waiting_is_written_all_the_same(tmp_path: Path, monkeypatch) -> None:
    # an abort cancels what the executor waits for; the attempt finished, so it is stored (resume skips it) and
    # the writer goes on with the next ones
    from sysmo.runner.results import ResultWriter

    writer = writer_for(tmp_path)
    release = threading.Event()
    write_batch = ResultWriter.write_batch

    def held_write(self, batch):
        release.wait(10)
        write_batch(self, batch)

    monkeypatch.setattr(ResultWriter, "write_batch", held_write)
    attempts = [attempt_of(n) for n in range(3)]
    unit = unit_for(attempts[0])
    first = writer.keep(unit, attempts[0], recorded("a0000"))
    while not first.running():  # the writer took it (and holds its batch)
        threading.Event().wait(0.01)
    gave_up, last = (writer.keep(unit, a, recorded(a.id)) for a in attempts[1:])
    assert gave_up.cancel()
    release.set()
    first.result(timeout=30), last.result(timeout=30)
    writer.close()
    assert gave_up.cancelled()
    assert {r["id"] for r in writer.store.query("SELECT id FROM attempts")} == {"a0000", "a0001", "a0002"}
    writer.store.close()
    writer.runner.close()


def test_a_full_disk_fails_every_waiting_attempt_and_the_writer_never_dies(tmp_path: Path, monkeypatch) -> None:
    # the disk fills under a batch while the run's log (on the same disk) cannot take the error either: the waiting
    # attempts hear a StorageError, later ones at once (nothing more is tried), and no future is left hanging
    from sysmo import log as sysmo_log
    from sysmo.errors import StorageError
    from sysmo.runner.results import ResultWriter

    writer = writer_for(tmp_path)
    tries: list[int] = []

    def full_disk(self, batch):
        tries.append(len(batch))
        raise sqlite3.OperationalError("database or disk is full")

    def log_on_the_full_disk(text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ResultWriter, "write_batch", full_disk)
    monkeypatch.setattr(sysmo_log, "_events_into", [log_on_the_full_disk])
    attempts = [attempt_of(n) for n in range(3)]
    unit = unit_for(attempts[0])
    first = writer.keep(unit, attempts[0], recorded(attempts[0].id))
    with pytest.raises(StorageError, match="the disk is full"):
        first.result(timeout=30)
    later = [writer.keep(unit, a, recorded(a.id)) for a in attempts[1:]]
    for future in later:
        with pytest.raises(StorageError, match="the disk is full"):
            future.result(timeout=30)
    assert tries == [1]  # one batch tried; the later attempts failed without touching the disk
    assert writer.failure is not None and writer._thread.is_alive()
    writer.close()
    writer.store.close()
    writer.runner.close()


def test_a_failure_of_the_writer_thread_itself_fails_what_it_holds(tmp_path: Path, monkeypatch) -> None:
    from sysmo.runner.results import ResultWriter

    writer = writer_for(tmp_path)

    def broken(self, batch):  # a bug outside the write (here: while it would wait for tools)
        raise RuntimeError("broken writer")

    monkeypatch.setattr(ResultWriter, "_write", broken)
    attempt = attempt_of(0)
    future = writer.keep(unit_for(attempt), attempt, recorded(attempt.id))
    with pytest.raises(RuntimeError, match="broken writer"):
        future.result(timeout=30)
    writer.close()
    writer.store.close()
    writer.runner.close()
