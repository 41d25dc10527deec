"""The local executor with ``processes`` > 1 (``sysmo run --processes N|auto``): attempts in N worker processes
of this machine, each an event loop of its own (``worker_process``), so the CPU an attempt's graph takes
(LangGraph, the agent's code, pydantic) is spread over the cores instead of one interpreter's.

The driver keeps what a run means (``RunState``: budget caps, stop handling, progress, summary) and is the only
writer of results.sqlite and checkpoints.sqlite: a worker sends each finished attempt as its rows
(``UnitRunner.arun_rows``: the record's rows, its recorded steps, its score), having written the artifact files
itself, and the driver's writer thread stores them as they are (the same rows a one-process run stores).

Units are dealt to the least busy worker, at most ``concurrency`` in flight in all. The first Ctrl-C starts no
more units and waits for the ones in flight (the workers ignore Ctrl-C: the driver tells them); a second one
aborts them. A worker that dies (killed, out of memory) is reported with its exit code; what it returned is
stored, its units in flight run once more on the other workers (a unit lost twice fails), and with no worker
left the run stops with what was stored (``sysmo run --resume`` runs the rest).

Each worker has its own LLM clients (and their caches' connections) and its own warm tool servers (a PlantUML
server, an OpenSysML kernel: hundreds of MB each), and the machine's tool slots (``tool_concurrency``) are
divided among the workers; the default is one process (runner.config).
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from sysmo.errors import StorageError, SysmoError
from sysmo.log import get_logger
from sysmo.runner.config import ExperimentConfig
from sysmo.runner.executor import RunState, decode_rows, rescore_stored, unit_key
from sysmo.runner.results import QUEUED
from sysmo.runner.units import WorkUnit

log = get_logger(__name__)

WAIT_S = 0.1  # how often the driver looks at the writer's progress and a stop request while attempts run
EXIT_S = 10.0  # how long a stopping worker may take to exit (its tool servers stop) before it is killed


@dataclass
class _Worker:
    index: int
    process: Any  # multiprocessing.Process
    conn: Connection
    units: set[str] = field(default_factory=set)  # attempt ids in flight here
    alive: bool = True

    def send(self, message: tuple) -> bool:
        try:
            self.conn.send(message)
            return True
        except (OSError, ValueError):  # it died; its end of the pipe is closed
            return False


@contextmanager
def _ctrl_c_ignored() -> Iterator[None]:
    """Ctrl-C ignored while the workers start (a spawned interpreter keeps it so, before its own code runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class ProcessExecutor:
    def __init__(self) -> None:
        self._workers: list[_Worker] = []
        self.started_at = 0.0  # when ``start`` started the workers (monotonic clock)
        # per worker that became ready: (seconds after ``started_at``, CPU seconds it spent building itself)
        self.ready: dict[int, tuple[float, float]] = {}

    def start(self, config: ExperimentConfig, directory: Path) -> None:
        """Start the workers (they import and build while the driver prepares the run)."""
        from sysmo.runner.worker_process import worker_main

        count = config.process_count()
        self.started_at, self.ready = time.monotonic(), {}
        tool_slots = max(1, config.tool_concurrency // count)
        # spawned, not forked: the driver already runs threads (an LLM client's, the logger's)
        context = multiprocessing.get_context("spawn")
        config_json = config.model_dump_json()
        with _ctrl_c_ignored():
            for index in range(count):
                ours, theirs = context.Pipe()
                process = context.Process(target=worker_main, args=(theirs, config_json, str(directory), tool_slots),
                                          name=f"sysmo-attempts-{index}", daemon=True)
                process.start()
                theirs.close()  # only the worker holds its end: the driver reads EOF when it dies
                self._workers.append(_Worker(index, process, ours))
        log.info("processes.start", workers=count, tool_slots=tool_slots)

    def close(self, abort: bool = False) -> None:
        """Stop the workers: each finishes (or, with ``abort``, cancels) what it runs and exits, its tool servers
        with it; one that does not exit within ``EXIT_S`` is killed."""
        workers, self._workers = self._workers, []
        for worker in workers:
            if worker.alive:
                worker.send(("abort",) if abort else ("stop",))
        deadline = time.monotonic() + EXIT_S
        for worker in workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                log.warning("processes.kill", worker=worker.index, pid=worker.process.pid)
                worker.process.kill()
                worker.process.join()
            worker.conn.close()

    def run(self, pending: list[WorkUnit], state: RunState) -> None:
        if not self._workers:
            self.start(state.config, state.summary.directory)
        try:
            self._schedule(pending, state)
        except BaseException:
            # an abort (second Ctrl-C) or a failure: the attempts in flight are cancelled, stored work stays,
            # resume runs the rest
            self.close(abort=True)
            raise
        self.close()

    def _schedule(self, pending: list[WorkUnit], state: RunState) -> None:
        config = state.config
        queue = list(reversed(pending))  # pop() from the end: the units in their stable order
        in_flight: dict[str, tuple[WorkUnit, _Worker]] = {}
        storing: deque[tuple[Future, Any]] = deque()  # (writer's future, attempt) in the order handed over
        rerun: set[str] = set()  # units lost with their worker once, and sent again
        failures: list[str] = []  # workers that died, and how
        started = time.monotonic()
        tasks = {unit.task.id: unit.task for unit in pending}
        for worker in self._workers:
            worker.send(("tasks", tasks))

        def count_stored(block: bool = False) -> None:
            """Count the attempts the writer has committed (all of them with ``block``)."""
            while storing and (block or storing[0][0].done()):
                future, attempt = storing.popleft()
                future.result()  # a failed write (a full disk) fails the run
                state.finished(attempt)

        def died(worker: _Worker) -> None:
            """The worker is gone: what it sent before is taken, no unit goes to it again, and its units in flight
            run once more elsewhere."""
            worker.alive = False
            try:
                while worker.conn.poll():  # attempts it finished and sent before it died are stored
                    received(worker, worker.conn.recv())
            except (EOFError, OSError):
                pass
            worker.process.join(5)
            code = worker.process.exitcode
            how = (f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}")
            failures.append(f"worker process {worker.index} (pid {worker.process.pid}): {how}")
            log.warning("processes.worker_died", worker=worker.index, pid=worker.process.pid, exit_code=code,
                        in_flight=len(worker.units))
            state.bar.note(f"worker process {worker.index} (pid {worker.process.pid}) died ({how}); what it "
                           f"returned is stored, its {len(worker.units)} attempt(s) in flight run again")
            for attempt_id in sorted(worker.units):
                unit, _ = in_flight.pop(attempt_id)
                if attempt_id in rerun:
                    state.failed(SysmoError(f"unit {attempt_id} was lost with its worker process twice; resume "
                                            "the run to try it again"))
                    continue
                rerun.add(attempt_id)
                queue.append(unit)  # the next to start
            worker.units.clear()

        def received(worker: _Worker, message: tuple) -> None:
            kind = message[0]
            if kind == "ready":
                self.ready[worker.index] = (time.monotonic() - self.started_at, message[2])
                log.info("processes.worker_ready", worker=worker.index, seconds=round(self.ready[worker.index][0], 2))
                return
            attempt_id = message[1]
            unit, _ = in_flight.pop(attempt_id)
            state.bar.running = len(in_flight)  # before the progress line of what came back
            worker.units.discard(attempt_id)
            if kind == "disk":  # its artifact files met a full or read-only disk: nothing more can be stored
                raise StorageError(message[2])
            if kind == "failed":
                _, _, expected, text = message
                if not expected:
                    log.error("processes.unit_crashed", unit=attempt_id, error=text)
                    raise SysmoError(f"attempt {attempt_id} failed with an unexpected error in worker process "
                                     f"{worker.index}: {text.splitlines()[0]} (what was finished is stored; "
                                     "`sysmo run --resume` runs the rest)")
                state.failed(SysmoError(text))
                return
            attempt, record, steps, card, events = decode_rows(state, message[2])
            state.came_back(unit, attempt)
            future = state.writer.keep(unit, attempt, steps, record, artifacts_written=True)
            if card is not None:
                future = state.writer.save_score(attempt, card, events)  # written after the record
            storing.append((future, attempt))

        def least_busy() -> _Worker:
            """The live worker with the fewest units in flight (one found dead on the way is reported)."""
            while True:
                live = [w for w in self._workers if w.alive]
                if not live:
                    raise SysmoError("no worker process of the run is left (" + "; ".join(failures[:3]) + "): "
                                     "what was finished is stored; `sysmo run --resume` runs the rest")
                worker = min(live, key=lambda w: len(w.units))
                if worker.process.is_alive():
                    return worker
                died(worker)

        while queue or in_flight:
            if queue and not in_flight:
                least_busy()  # none left: stop, with what was stored
            while queue and len(in_flight) < config.concurrency and state.may_start():
                unit = queue.pop()
                if unit.attempt_id in state.attempted:  # stored before an interruption: only its score is missing
                    rescore_stored(unit, state)
                    continue
                worker = least_busy()
                in_flight[unit.attempt_id] = (unit, worker)
                worker.units.add(unit.attempt_id)
                if not worker.send(("unit", unit_key(unit))):
                    died(worker)
            state.bar.running = len(in_flight)
            if not in_flight:
                break
            by_conn = {w.conn: w for w in self._workers if w.alive}
            for conn in wait(list(by_conn), timeout=WAIT_S):
                worker = by_conn[conn]
                try:
                    while worker.alive and conn.poll():
                        received(worker, conn.recv())
                except (EOFError, OSError):
                    died(worker)
            count_stored()
            if len(storing) > QUEUED:  # the writer is behind: wait for it rather than hold more
                storing[0][0].result()
                count_stored()
        count_stored(block=True)
        log.info("processes.done", seconds=round(time.monotonic() - started, 2), rerun=len(rerun))

