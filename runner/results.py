"""The run's one writer: a thread that stores finished attempts (their steps' checkpoints, artifact files and
record) and scores, the same for every executor.

Only the driver process writes results.sqlite and
checkpoints.sqlite, so a resumed run sees the same state whichever executor ran the attempts.

Executors hand it work (``keep``, ``save_score``) and get a ``Future`` that is done once the attempt is
committed; only then is the attempt counted (summary, progress), so what a run reported stored survives a
SIGKILL. The thread writes a batch of attempts (up to ``BATCH``: what queued up, and what keeps coming
within ``GAP_S`` of the previous one, for at most ``LINGER_S``) in one transaction per file
(``CheckpointStore.save_many``, then the artifact files, then ``Store.save_attempts`` and ``save_scores``):
one commit and a few statements for many attempts instead of for each. A slow run (real models, real tools)
waits at most ``GAP_S`` for a second attempt; a fast one fills its batches. An attempt's steps are committed before its record, so a
stored attempt has its steps; one killed in between is not on record and runs again on resume (its steps
replaced). Before a batch it waits (at most ``UnitRunner``'s ``PERSIST_WAIT_S``) for an attempt's tool check
to run, so its share of the interpreter lock overlaps the tool's time rather than an attempt's graph.

Every SQLite statement and file operation gives the interpreter lock up and must take it back; while the
event loop's thread runs graphs, taking it back waits for Python's thread switch interval (5 ms by default),
so a writer thread with a few dozen such calls per attempt would spend most of its time waiting (and fall
behind). ``quick_turns`` lowers the interval to ``SWITCH_INTERVAL_S`` while a run writes.

The thread never dies with work waiting: a batch that cannot be written fails its futures with the error (a full
or read-only disk as a ``StorageError``); after such a disk error every later job fails at once with the same
error (nothing more can be stored, and the executors stop the run on it); and a failure of the thread itself
fails every future it holds. Its own error events go to the terminal when the run's log cannot be written.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sysmo.contracts.attempt import Attempt
from sysmo.contracts.scorecard import ScoreCard
from sysmo.errors import StorageError, storage_problem
from sysmo.log import get_logger
from sysmo.graphs import live
from sysmo.runner.budget import Spending
from sysmo.runner.summary import RunSummary
from sysmo.runner.unit_runner import UnitRunner
from sysmo.runner.units import WorkUnit, task_meta
from sysmo.store import AttemptRecord, Store

if TYPE_CHECKING:
    from sysmo.graphs.checkpoint import StepRecorder

log = get_logger(__name__)

BATCH = 64  # the most attempts one transaction writes
QUEUED = 4 * BATCH  # executors keep at most about this many attempts waiting to be written (memory bound)
GAP_S = 0.02  # the writer waits this long for one more attempt of a batch...
LINGER_S = 0.2  # ...and at most this long after the first
SWITCH_INTERVAL_S = 0.001  # Python's thread switch interval while a run writes (``quick_turns``)


@contextmanager
def quick_turns() -> Iterator[None]:
    """Python's thread switch interval at most ``SWITCH_INTERVAL_S`` in the block (restored after): the writer
    thread gets the interpreter lock back within 1 ms of a statement, not 5 ms."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@dataclass(kw_only=True)
class _Job:
    """Work handed to the writer; ``future`` is done once it is committed."""

    future: Future = field(default_factory=Future)
    # False once the executor cancelled its future (an abort): the finished attempt is written all the same
    # (resume then skips it), its future left as it is
    report: bool = True


@dataclass
class _Keep(_Job):
    attempt: Attempt
    record: AttemptRecord | None  # made by the writer when None (a Ray worker makes it where the attempt ran)
    meta: dict[str, Any]
    steps: StepRecorder | None
    artifacts_written: bool = False  # by the process that ran the attempt (the local executor's workers)


@dataclass
class _Score(_Job):
    attempt_id: str
    card: ScoreCard
    events: list[Any]


@dataclass
class WriteTimes:
    """Seconds the writer spent, by part (wall clock, and the writer thread's own CPU time: the wall time also
    counts waiting for the interpreter lock and for a core), and how many attempts and batches
    (``speed/scale.py`` prints them)."""

    records: float = 0.0  # serialising attempts into rows (``AttemptRecord.of``), when the writer does it
    records_made: int = 0  # how many it made (a Ray worker makes its attempts' rows)
    store: float = 0.0  # results.sqlite: attempts and scores
    checkpoints: float = 0.0
    artifacts: float = 0.0
    cpu: dict[str, float] = field(default_factory=lambda: dict.fromkeys(("records", "store", "checkpoints",
                                                                          "artifacts"), 0.0))
    attempts: int = 0
    batches: int = 0


class ResultWriter:
    def __init__(self, runner: UnitRunner, store: Store, experiment_id: str, spending: Spending,
                 summary: RunSummary, *, wait_for_tools: bool = True) -> None:
        self.runner, self.store, self.experiment_id = runner, store, experiment_id
        self.spending, self.summary = spending, summary
        self.times = WriteTimes()
        self._wait_for_tools = wait_for_tools  # the local executor: tool checks run in this process
        self._queue: queue.SimpleQueue[_Keep | _Score | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.failure: StorageError | None = None  # the disk error that ended writing: later jobs fail with it

    # ------------------------------------------------------------------ submitting (any thread)
    def keep(self, unit: WorkUnit, attempt: Attempt, steps: StepRecorder | None,
             record: AttemptRecord | None = None, *, artifacts_written: bool = False) -> Future:
        """Queue the attempt's steps, artifacts (unless ``artifacts_written`` already) and record; the future is
        done once they are committed."""
        return self._submit(_Keep(attempt, record, task_meta(unit.task), steps, artifacts_written))

    def save_score(self, attempt: Attempt, card: ScoreCard, events: list[Any]) -> Future:
        """Queue a score made here or on a worker; its helper and judge calls count towards the budget now."""
        scoring_spend = sum(getattr(e, "spend_usd", 0.0) for e in events)
        self.spending.cost += scoring_spend
        self.summary.cost_usd += scoring_spend
        return self._submit(_Score(attempt.id, card, events))

    def score(self, unit: WorkUnit, attempt: Attempt) -> None:
        """Score here (the local executor: the score cache of the store is used) and store the score; returns
        once it is committed."""
        card, events = self.runner.score_with_events(unit, attempt, self.store)
        self.save_score(attempt, card, events).result()

    def _submit(self, job: _Keep | _Score) -> Future:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="sysmo-writer", daemon=True)
                self._thread.start()
        self._queue.put(job)
        return job.future

    def close(self) -> None:
        """Write what is queued, then stop the thread (a later ``keep`` starts it again)."""
        with self._start_lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    # ------------------------------------------------------------------ the writer thread
    def _loop(self) -> None:
        batch: list[_Keep | _Score] = []
        try:
            self._take_and_write(batch)
        except BaseException as exc:  # noqa: BLE001 - a failure of the thread itself: no executor waits forever
            _report("writer.crashed", attempts=len(batch), error=f"{type(exc).__name__}: {exc}")
            self._fail(batch, exc)
            while True:  # what is queued fails too; the next ``keep`` starts a new thread
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job.report = job.future.set_running_or_notify_cancel()
                    self._fail([job], exc)

    def _take_and_write(self, batch: list[_Keep | _Score]) -> None:
        stopping = False
        while not stopping:
            job = self._queue.get()
            if job is None:
                break
            batch[:] = [job]
            # more attempts per transaction (a statement costs about the same for one attempt as for 64): take
            # what keeps coming, each within GAP_S of the one before, for at most LINGER_S
            deadline = time.monotonic() + LINGER_S
            while len(batch) < BATCH and self.failure is None:
                try:
                    job = self._queue.get(timeout=max(0.0, min(GAP_S, deadline - time.monotonic())))
                except queue.Empty:
                    break
                if job is None:
                    stopping = True  # write this batch, then stop
                    break
                batch.append(job)
            for job in batch:  # from now on the futures cannot be cancelled
                job.report = job.future.set_running_or_notify_cancel()
            if self.failure is not None:  # the disk failed: nothing more is tried, every job hears why at once
                self._fail(batch, self.failure)
            else:
                if self._wait_for_tools and not stopping:
                    self.runner.wait_for_a_tool_check()
                self._write(batch)
            batch.clear()

    def _write(self, batch: list[_Keep | _Score]) -> None:
        try:
            self.write_batch(batch)
        except Exception as exc:  # noqa: BLE001 - every waiting executor hears of it (a full disk, a bug)
            problem = storage_problem(exc)
            if problem is not None:
                error = StorageError(problem)
                error.__cause__ = exc
                self.failure = error
            _report("writer.failed", attempts=len(batch), error=f"{type(exc).__name__}: {exc}")
            self._fail(batch, self.failure if problem is not None else exc)
            return
        for job in batch:
            if job.report:
                job.future.set_result(None)

    @staticmethod
    def _fail(batch: list[_Keep | _Score], exc: BaseException) -> None:
        for job in batch:
            if job.report and not job.future.done():
                job.future.set_exception(exc)

    def write_batch(self, batch: list[_Keep | _Score]) -> None:
        """Steps (one transaction), artifact files, then records and scores (one transaction)."""
        keeps = [j for j in batch if isinstance(j, _Keep)]
        scores = [(j.attempt_id, j.card, j.events) for j in batch if isinstance(j, _Score)]
        times, cpu = self.times, self.times.cpu
        clock, cpu_clock = time.perf_counter, time.thread_time
        marks = [(clock(), cpu_clock())]
        steps = [(j.steps, j.attempt.id) for j in keeps if j.steps is not None]
        if steps:
            self.runner.checkpoints().save_many(steps)
        marks.append((clock(), cpu_clock()))
        for j in keeps:
            if not j.artifacts_written:
                self.runner.write_artifacts(j.attempt)
        marks.append((clock(), cpu_clock()))
        records = [j.record if j.record is not None else AttemptRecord.of(j.attempt, j.meta) for j in keeps]
        marks.append((clock(), cpu_clock()))
        times.records_made += sum(j.record is None for j in keeps)
        with self.store.transaction():
            self.store.save_attempts(self.experiment_id, records)
            if scores:
                self.store.save_scores(self.experiment_id, scores)
        for record in records:  # stored: no longer an attempt running now for the viewer
            live.stored(self.runner.directory, record.attempt_id)
        marks.append((clock(), cpu_clock()))
        for part, (before, after) in zip(("checkpoints", "artifacts", "records", "store"), zip(marks, marks[1:])):
            setattr(times, part, getattr(times, part) + after[0] - before[0])
            cpu[part] += after[1] - before[1]
        times.attempts += len(keeps)
        times.batches += 1


def _report(event: str, **fields: Any) -> None:
    """An error event of the writer; one that cannot be logged (the run's log on the full disk) goes to stderr."""
    try:
        log.error(event, **fields)
    except Exception:  # noqa: BLE001 - the event must not take the thread down with it
        try:
            sys.stderr.write(f"{event} {fields}\n")
        except Exception:  # noqa: BLE001 - no terminal either: the futures still carry the error
            pass
