"""The local executor: attempts on one asyncio event loop (model calls awaited there), tool checks and scoring
in the loop's worker threads, store writes by the run's writer thread (``ResultWriter``)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from sysmo.contracts.attempt import Attempt
from sysmo.errors import StorageError, SysmoError
from sysmo.runner.config import ExperimentConfig
from sysmo.runner.executor import RunState
from sysmo.runner.results import QUEUED
from sysmo.runner.units import WorkUnit

if TYPE_CHECKING:
    from sysmo.graphs.checkpoint import StepRecorder


class LocalExecutor:
    """A two-stage pipeline: up to ``concurrency`` attempts run while finished ones are stored (by the writer
    thread, many per transaction) and scored, so writing results does not hold up the next attempts."""

    def start(self, config: ExperimentConfig, directory: Path) -> None:
        """Nothing to start ahead: the event loop and its threads live for ``run``."""

    def close(self) -> None:
        """Nothing outlives ``run``."""

    def run(self, pending: list[WorkUnit], state: RunState) -> None:
        config = state.config
        # the tool processes are bounded by the runner's tool slots (sized to the machine)
        with ThreadPoolExecutor(max_workers=2 * config.concurrency + config.tool_concurrency + 2,  # both stages
                                thread_name_prefix="sysmo-work") as workers:
            loop = asyncio.new_event_loop()
            loop.set_default_executor(workers)
            try:
                loop.run_until_complete(self._schedule(pending, state))
            except BaseException:
                workers.shutdown(wait=False, cancel_futures=True)  # tool checks not begun never start
                raise
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

    @staticmethod
    async def _run_unit(unit: WorkUnit, state: RunState) -> tuple[WorkUnit, Attempt, StepRecorder | None]:
        """Stage 1, on the event loop: the attempt (model calls awaited, tool checks in worker threads). An
        attempt that finished before an interruption (only its score is missing) comes from the store."""
        if unit.attempt_id in state.attempted:
            return unit, await asyncio.to_thread(state.writer.store.attempt, unit.attempt_id), None
        attempt, steps = await state.runner.arun_attempt(unit)
        return unit, attempt, steps

    @staticmethod
    async def _persist_unit(unit: WorkUnit, attempt: Attempt, steps: StepRecorder | None, fresh: bool,
                            state: RunState) -> tuple[WorkUnit, Attempt]:
        """Stage 2: the attempt queued for the writer (done once it is committed), then scored in a worker
        thread while the next attempts run, and its score stored."""
        if fresh:
            await asyncio.wrap_future(state.writer.keep(unit, attempt, steps))
        if state.config.score:
            await asyncio.to_thread(state.writer.score, unit, attempt)
        return unit, attempt

    async def _schedule(self, pending: list[WorkUnit], state: RunState) -> None:
        queue = list(pending)
        queue.reverse()  # pop() from the end: the units in their stable order
        concurrency = state.config.concurrency
        # attempts waiting for the writer cost only memory; scoring ones hold worker threads and tool slots
        waiting = concurrency if state.config.score else max(concurrency, QUEUED)
        running: set[asyncio.Future] = set()
        persisting: set[asyncio.Future] = set()
        finished: list[asyncio.Future] = []  # tasks done since the loop last looked (their callbacks add them)
        wake = asyncio.Event()

        def on_done(task: asyncio.Future) -> None:
            finished.append(task)
            wake.set()

        def start(coroutine: object, into: set[asyncio.Future]) -> None:
            task = asyncio.ensure_future(coroutine)  # type: ignore[arg-type]
            task.add_done_callback(on_done)
            into.add(task)

        try:
            while queue or running or persisting:
                while queue and len(running) < concurrency and len(persisting) <= waiting and state.may_start():
                    start(self._run_unit(queue.pop(), state), running)
                state.bar.running = len(running)
                if not running and not persisting:
                    break
                await wake.wait()
                wake.clear()
                done, finished[:] = list(finished), []
                for task in done:
                    stage_one = task in running
                    (running if stage_one else persisting).discard(task)
                    state.bar.running = len(running)
                    try:
                        result = task.result()
                    except StorageError:
                        raise  # a full or read-only disk: nothing more can be stored, the run stops now
                    except SysmoError as exc:
                        state.failed(exc)
                        continue
                    if stage_one:
                        unit, attempt, steps = result
                        fresh = state.came_back(unit, attempt)
                        start(self._persist_unit(unit, attempt, steps, fresh, state), persisting)
                        continue
                    state.finished(result[1])
        except BaseException:
            # an unexpected failure (a full disk, a bug) or an abort: the other units stop before the loop
            # closes; what was stored stays (the writer finishes what was handed to it), the rest runs again
            # on resume
            for task in running | persisting:
                task.cancel()
            await asyncio.gather(*running, *persisting, return_exceptions=True)
            raise
