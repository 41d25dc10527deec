"""A worker process of the local executor with ``processes`` > 1: an event loop of its own runs the units the
driver sends (as many at once as the driver has sent and not had back) and sends back each attempt as the
rows the driver's writer stores (``UnitRunner.arun_rows``); it writes the attempt's artifact files itself.

Messages from the driver: ``("tasks", {id: Task})`` (once, before the units), ``("unit", UnitKey)``,
``("stop",)`` (finish what runs, then exit) and ``("abort",)`` (cancel what runs, exit). To the driver:
``("ready", pid, CPU seconds spent building)`` once built, then per unit ``("done", attempt_id, rows)`` or
``("failed", attempt_id, expected, message)`` (``expected``: a ``SysmoError``, which fails the unit; otherwise
an unexpected error, which fails the run as it would on the driver's own event loop) or ``("disk", attempt_id,
problem)`` (its artifact files met a full or read-only disk: the run stops with exit code 3).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sysmo.errors import SysmoError, storage_problem
from sysmo.runner.units import WorkUnit


def worker_main(conn: Connection, config_json: str, directory: str, tool_slots: int) -> None:
    """The process's entry point: build the runner (imports, LLM clients), then serve units until told to stop."""
    # Ctrl-C reaches every process of the terminal's group; the driver decides: finish the attempts in flight
    # (first Ctrl-C) or abort them (second), telling this process so
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from sysmo.agents.registry import all_agents
    from sysmo.runner.collector import fewer_collections
    from sysmo.runner.config import ExperimentConfig
    from sysmo.runner.results import quick_turns
    from sysmo.runner.unit_runner import UnitRunner

    # the machine's tool slots are shared among the processes: no more tool processes than the driver alone ran
    config = ExperimentConfig.model_validate_json(config_json).model_copy(update={"tool_concurrency": tool_slots})
    runner = UnitRunner(config, Path(directory))
    all_agents()  # the agents' graphs (and LangGraph) imported before the first unit
    loop = asyncio.new_event_loop()
    try:
        with ThreadPoolExecutor(max_workers=2 * config.concurrency + tool_slots + 2,
                                thread_name_prefix="sysmo-work") as threads, fewer_collections(), quick_turns():
            # quick turns: a tool check, an artifact write or a unit from the driver hops between this loop's
            # thread and another one, each hop waiting for the interpreter lock (up to 5 ms by default)
            loop.set_default_executor(threads)
            loop.run_until_complete(_serve(conn, runner))
            loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        runner.close()
        loop.close()
        conn.close()


async def _serve(conn: Connection, runner: Any) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[tuple | None] = asyncio.Queue()

    def read() -> None:  # a thread: the pipe's reads block
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                message = None  # the driver is gone: nobody to send attempts to
            loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message is None or message[0] in ("stop", "abort"):
                return

    threading.Thread(target=read, name="sysmo-inbox", daemon=True).start()
    tasks: dict[str, Any] = {}
    running: set[asyncio.Future] = set()
    conn.send(("ready", os.getpid(), time.process_time()))
    while True:
        message = await inbox.get()
        if message is None or message[0] in ("stop", "abort"):
            break
        if message[0] == "tasks":
            tasks.update(message[1])
        elif message[0] == "unit":
            task = asyncio.ensure_future(_run_unit(conn, runner, tasks, message[1]))
            running.add(task)
            task.add_done_callback(running.discard)
    if message is None or message[0] == "abort":
        for task in running:
            task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


async def _run_unit(conn: Connection, runner: Any, tasks: dict[str, Any], key: tuple) -> None:
    task_id, *rest = key
    unit = WorkUnit(tasks[task_id], *rest)
    try:
        rows = await runner.arun_rows(unit, artifacts=True)
    except Exception as exc:  # noqa: BLE001 - every failure goes to the driver, which decides
        problem = storage_problem(exc)
        if problem is not None:  # a full or read-only disk (the attempt's artifact files): the run stops
            conn.send(("disk", unit.attempt_id, problem))
        elif isinstance(exc, SysmoError):
            conn.send(("failed", unit.attempt_id, True, str(exc)))
        else:  # a bug: the driver fails the run with it, as on its own loop
            detail = "".join(traceback.format_exception(exc)).rstrip()
            conn.send(("failed", unit.attempt_id, False, f"{type(exc).__name__}: {exc}\n{detail}"))
        return
    conn.send(("done", unit.attempt_id, rows))
