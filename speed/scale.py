"""The runner at scale: N attempts with a zero-latency model and fake tools, on the local and the Ray executor.

Run: python speed/scale.py [--attempts 100000] [--ray-attempts 100000] [--ray-workers 4] [--tasks 10]
                           [--executors local,processes,ray] [--processes auto] [--resume-check]

Harness only: the model is ``reference`` (answers every request at once with the task's reference model, no
network) and the tool check is a fake that passes every artifact at once, in the driver and in every Ray
worker (a worker set-up hook) and in every worker process of the local executor (``processes``: it imports this
file). Everything else is the real runner: work units, scheduling, LangGraph
graph execution with every step checkpointed (``checkpoints: steps``), artifact files, store writes, budget
and progress bookkeeping. Scoring is off (it would run the real tools).

Executors: ``local`` (one process: attempts on the driver's event loop), ``processes`` (the local executor with
``--processes``, default auto: one worker process per core) and ``ray``. Prints the machine's load average,
then per executor: attempts/s, the driver's CPU time per attempt,
results.sqlite and checkpoints.sqlite bytes per attempt, time spent in store writes per attempt (the attempt's
record: its rows made, when the driver makes them, and written) and in checkpoint and artifact writes per
attempt (all timed in the driver's writer thread, where all writes happen, with the mean batch it wrote),
artifact bytes, the driver's peak memory (and the workers' for Ray); then whether each executor stored results
identical to the first one's (task, agent, model, sample, status, rounds, final artifact hash), and its rate as
a ratio of the first's. With ``--resume-check`` a local run (and a ``processes`` one, when measured) is killed
(SIGKILL) once half its attempts are stored, resumed, and its results compared with the uninterrupted run. Targets: >= 1,000 attempts/s harness-only on 2 cores, store writes < 0.5 ms per attempt,
checkpoints at most a third of 62.8 kB per attempt (the figure before the long texts were stored once per
file), peak memory flat in the number of attempts (compare two runs of different sizes: speed/run_all.py).
The baseline measured in the same run: LangGraph alone on an attempt's graph (``graph_floor``), CPU ms per
attempt; the driver's CPU per attempt is printed as a multiple of it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import signal
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_RATE = 1000.0  # attempts/s, harness only, 2 cores
TARGET_STORE_MS = 0.5  # per attempt
TARGET_CHECKPOINT_B = 62_800 / 3  # per attempt: a third of the bytes when every step stored the task's inputs again
FLOOR_MS: list[float] = []  # LangGraph alone, CPU ms per attempt's graph (the run's baseline)

WRITERS: list[Any] = []  # the run's ResultWriter (its ``times``)
POOLS: list[Any] = []  # the run's ProcessExecutor (its workers' start-up)


def fake_tools() -> None:
    """Every tool check passes at once (installed in the driver and in every Ray worker)."""
    from sysmo.contracts.check import CheckResult, Outcome
    from sysmo.tools import checkers

    def passing(artifact: Any, task: Any = None) -> CheckResult:
        return CheckResult(tool="fake", tool_version="0", outcome=Outcome.OK)

    checkers.check_artifact = passing


def time_writes() -> None:
    """Keep the run's writer, to read the time it spent writing (``ResultWriter.times``)."""
    from sysmo.runner.results import ResultWriter

    original = ResultWriter.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        WRITERS.append(self)

    ResultWriter.__init__ = init  # type: ignore[method-assign]
    from sysmo.runner.process_executor import ProcessExecutor

    original_pool = ProcessExecutor.__init__

    def init_pool(self: Any) -> None:
        original_pool(self)
        POOLS.append(self)

    ProcessExecutor.__init__ = init_pool  # type: ignore[method-assign]


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


CHECKPOINTS = {"mode": "steps"}  # --checkpoints
PROCESSES: dict[str, Any] = {"processes": "auto"}  # --processes


def config(experiment_id: str, output: Path, attempts: int, tasks: int, executor: str, workers: int) -> Any:
    """``attempts`` attempts (rounded up to a multiple of the tasks selected) of one agent and one model;
    ``executor``: local, processes (the local executor in ``--processes`` worker processes) or ray."""
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig, load_selected_tasks

    selection = TaskSelection(benchmarks=["starter"], kinds=["uml_class", "sysml"], sample=tasks, seed=0)
    fields: dict[str, Any] = dict(id=experiment_id, output_dir=output, agents=["base_modeling"], models=["reference"],
                                  score=False, executor="ray" if executor == "ray" else "local", tasks=selection,
                                  checkpoints=CHECKPOINTS["mode"], concurrency=2 * workers if executor == "ray" else 8,
                                  processes=PROCESSES["processes"] if executor == "processes" else 1)
    n_tasks = len(load_selected_tasks(ExperimentConfig(**fields)))
    return ExperimentConfig(**fields, samples=-(-attempts // n_tasks))


def results(directory: Path) -> list[tuple]:
    with sqlite3.connect(directory / "results.sqlite") as conn:
        return conn.execute("SELECT task_id, agent, model, sample_index, status, n_rounds,"
                            " json_extract(attempt_json, '$.final_artifact.files')"
                            " FROM attempts ORDER BY task_id, agent, model, sample_index").fetchall()


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def measure(executor: str, output: Path, attempts: int, tasks: int, workers: int) -> tuple[list[tuple], float]:
    from sysmo.runner import run_experiment

    if executor == "ray":
        import ray

        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 runtime_env={"worker_process_setup_hook": fake_tools})
    WRITERS.clear()
    POOLS.clear()
    cfg = config(f"scale-{executor}", output, attempts, tasks, executor, workers)
    label = f"{executor} ({cfg.process_count()} worker processes)" if executor == "processes" else executor
    print(f"\n{label}: starting at {load_average()}")
    started, cpu_s, children_s = time.monotonic(), time.process_time(), children_cpu_s()
    summary = run_experiment(cfg, progress=False)
    seconds, cpu_s = time.monotonic() - started, time.process_time() - cpu_s
    children_s = children_cpu_s() - children_s  # the local executor's worker processes (joined by the run's end)
    worker_mb = 0.0
    if executor == "ray":
        import ray

        worker_mb = ray_worker_peak_mb()
        ray.shutdown()
    directory = output / cfg.experiment_id()
    n = max(1, summary.ran)
    rate = summary.ran / seconds
    times = WRITERS[-1].times
    store_ms = 1000 * (times.records + times.store) / n
    cpu = {part: 1000 * spent / n for part, spent in times.cpu.items()}
    rows = (f"rows {1000 * times.records / n:.3f} + SQL {1000 * times.store / n:.3f}" if times.records_made
            else f"rows made on the workers; SQL {1000 * times.store / n:.3f}")
    print(f"{label}: {summary.ran} attempts ({summary.passed} passed) in {seconds:.1f} s = {rate:.0f} attempts/s "
          f"(target >= {TARGET_RATE:.0f}: {'met' if rate >= TARGET_RATE else 'NOT met'}); {load_average()}")
    floor = (f" = {1000 * cpu_s / n / FLOOR_MS[0]:.1f}x LangGraph alone ({FLOOR_MS[0]:.3f} ms)" if FLOOR_MS else "")
    print(f"  driver CPU      {1000 * cpu_s / n:8.3f} ms/attempt (all its threads){floor}")
    if executor == "processes" and POOLS and POOLS[-1].ready:
        ready = POOLS[-1].ready.values()
        start_s, start_cpu_s = max(r[0] for r in ready), sum(r[1] for r in ready)
        work_ms = 1000 * (children_s - start_cpu_s) / n
        steady = summary.ran / max(1e-9, seconds - start_s)
        print(f"  workers' CPU    {work_ms:8.3f} ms/attempt (all worker processes, after their start-up)"
              + (f" = {work_ms / FLOOR_MS[0]:.1f}x LangGraph alone" if FLOOR_MS else ""))
        print(f"  start-up        workers ready after {start_s:.1f} s ({1000 * start_cpu_s / n:.3f} ms of CPU per "
              f"attempt of this run); {steady:.0f} attempts/s from then on")
    print(f"  results.sqlite  {size(directory / 'results.sqlite') / n:8.0f} B/attempt, writes {store_ms:.3f} ms/attempt "
          f"({rows}; target < {TARGET_STORE_MS:.1f} ms: {'met' if store_ms < TARGET_STORE_MS else 'NOT met'}), "
          f"writer CPU {cpu['records'] + cpu['store']:.3f} ms")
    checkpoint_b = size(directory / 'checkpoints.sqlite') / n
    print(f"  checkpoints     {checkpoint_b:8.0f} B/attempt (target <= {TARGET_CHECKPOINT_B:.0f}: "
          f"{'met' if checkpoint_b <= TARGET_CHECKPOINT_B else 'NOT met'}), writes "
          f"{1000 * times.checkpoints / n:.3f} ms/attempt, writer CPU {cpu['checkpoints']:.3f} ms")
    print(f"  artifacts       {folder_size(directory / 'artifacts') / n:8.0f} B/attempt (files), writes "
          f"{1000 * times.artifacts / n:.3f} ms/attempt, writer CPU {cpu['artifacts']:.3f} ms")
    print(f"  writer          {times.batches} transactions, {times.attempts / max(1, times.batches):.1f} attempts each")
    print(f"  peak memory     driver {peak_rss_mb():.0f} MB" + (f", largest worker {worker_mb:.0f} MB" if worker_mb else ""))
    return results(directory), rate


def graph_floor(runs: int = 300) -> float:
    """CPU ms per run of LangGraph alone on an attempt's graph: ``base_modeling``'s nodes (first_request, generate,
    check), each returning what that node of a real attempt returned (one is run first), every step checkpointed
    by the runner's recorder, driven as an attempt is (updates and values streamed, the check in a worker
    thread). What an attempt costs beyond it is sysmo's: node code, the LLM client, events, records, writes."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from langgraph.graph import END, START, StateGraph
    from sysmo.agents.run import arun_attempt_steps
    from sysmo.benchmarks.registry import load_tasks
    from sysmo.graphs.checkpoint import StepRecorder, StepRouter
    from sysmo.graphs.context import AgentContext
    from sysmo.graphs.inline import runs_inline
    from sysmo.graphs.loop import Edges, add_node, initial_state
    from sysmo.graphs.state import AgentState
    from sysmo.llm import LLM

    from sysmo.tools import checkers

    task = next(t for t in load_tasks(None, families=["starter"]) if t.kind.value == "uml_class")
    ctx = AgentContext(task=task, llm=LLM("reference", cache=False), checker=checkers.check_artifact)  # the fake
    rnd = asyncio.run(arun_attempt_steps("base_modeling", ctx, model_name="reference")).rounds[0].model_dump(mode="json")

    @runs_inline
    def first_request(state: Any, ctx: Any) -> dict[str, Any]:
        return {"pending": rnd["messages"]}

    async def generate(state: Any, ctx: Any) -> dict[str, Any]:
        return {"response": rnd["response"], "llm_calls": rnd["llm_calls"], "error": None, "llm_time_s": 0.0,
                "artifact": rnd["artifact"], "extraction_error": None, "extraction_notes": []}

    def check(state: Any, ctx: Any) -> dict[str, Any]:
        return {"check": rnd["check"], "tool_time_s": 0.0, "rounds": [rnd], "status": "passed"}

    graph = StateGraph(AgentState, context_schema=AgentContext)
    add_node(graph, "first_request", first_request, Edges(lambda s: "next", {"next": "generate"}))
    add_node(graph, "generate", generate)
    add_node(graph, "check", check, Edges(lambda s: "end", {"end": END}))
    graph.add_edge(START, "first_request")
    graph.add_edge("generate", "check")
    router = StepRouter()
    compiled = graph.compile(checkpointer=router)

    async def run(n: int) -> None:
        for i in range(n):
            config = {"configurable": {"thread_id": str(i)}}
            with router.recording(str(i), StepRecorder()):
                async for _ in compiled.astream(initial_state(ctx), config, context=ctx,
                                                stream_mode=["updates", "values"], durability="sync"):
                    pass

    loop = asyncio.new_event_loop()
    loop.set_default_executor(ThreadPoolExecutor(4))
    try:
        loop.run_until_complete(run(20))
        started = time.process_time()
        loop.run_until_complete(run(runs))
        return 1000 * (time.process_time() - started) / runs
    finally:
        loop.close()


def ray_worker_peak_mb() -> float:
    """The largest resident set among this machine's Ray worker processes (at the end of the run)."""
    import psutil

    sizes = [p.memory_info().rss for p in psutil.process_iter(["name", "cmdline"])
             if "UnitActor" in " ".join(p.info.get("cmdline") or []) or (p.info.get("name") or "").startswith("ray::")]
    return max(sizes, default=0) / 2**20


def _child(output: str, attempts: int, tasks: int, executor: str, processes: Any) -> None:
    fake_tools()
    from sysmo.runner import run_experiment

    PROCESSES["processes"] = processes
    run_experiment(config(f"scale-resume-{executor}", Path(output), attempts, tasks, executor, 1), progress=False)


def resume_check(output: Path, attempts: int, tasks: int, expected: list[tuple], executor: str = "local") -> None:
    """Kill a run of ``executor`` (SIGKILL) once half its attempts are stored, resume it with the same executor,
    compare with ``expected``."""
    from sysmo.runner import run_experiment

    process = multiprocessing.get_context("fork").Process(
        target=_child, args=(str(output), attempts, tasks, executor, PROCESSES["processes"]))
    process.start()
    db = output / f"scale-resume-{executor}" / "results.sqlite"
    stored = 0
    while process.is_alive():
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=5) as conn:
                    stored = conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
            except sqlite3.OperationalError:
                pass
            if stored >= attempts // 2:
                os.kill(process.pid, signal.SIGKILL)
                break
        time.sleep(0.05)
    process.join()
    started = time.monotonic()
    summary = run_experiment(config(f"scale-resume-{executor}", output, attempts, tasks, executor, 1), progress=False,
                             resume=True)
    final = results(output / f"scale-resume-{executor}")
    print(f"\nresume ({executor}): killed at {stored} stored attempts; the resumed run skipped {summary.skipped_done} and ran "
          f"{summary.ran} in {time.monotonic() - started:.1f} s; results identical to the uninterrupted run: "
          f"{final == expected}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--ray-attempts", type=int, default=None, help="attempts on Ray (default: --attempts)")
    parser.add_argument("--ray-workers", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=10, help="starter uml_class tasks the attempts spread over")
    parser.add_argument("--executors", default="local,processes,ray",
                        help="local (one process), processes (--processes worker processes), ray")
    parser.add_argument("--processes", default="auto", help="worker processes of the `processes` executor (N or "
                        "auto: one per core)")
    parser.add_argument("--resume-check", action="store_true")
    parser.add_argument("--no-floor", dest="floor", action="store_false",
                        help="skip the baseline: LangGraph alone on an attempt's graph (the part of the CPU per "
                             "attempt that is not sysmo's)")
    parser.add_argument("--checkpoints", choices=["steps", "none"], default="steps",
                        help="LangGraph's checkpoint of every step (sysmo run's default) or none")
    args = parser.parse_args()
    CHECKPOINTS["mode"] = args.checkpoints
    PROCESSES["processes"] = args.processes
    os.environ.setdefault("SYSMO_LOG_LEVEL", "WARNING")
    fake_tools()
    time_writes()
    print(f"{os.cpu_count()} cores; model `reference` (zero latency), fake tool checks, checkpoints: {args.checkpoints}; "
          f"{load_average()}")
    if args.floor:
        FLOOR_MS.append(graph_floor())
        print(f"LangGraph alone (baseline): {FLOOR_MS[0]:.3f} ms CPU per attempt's graph (base_modeling's nodes "
              f"returning a recorded attempt's updates, every step checkpointed)")
    outcomes: dict[str, list[tuple]] = {}
    rates: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="sysmo-scale-") as tmp:
        for executor in args.executors.split(","):
            n = args.ray_attempts or args.attempts if executor == "ray" else args.attempts
            outcomes[executor], rates[executor] = measure(executor, Path(tmp), n, args.tasks, args.ray_workers)
        first, *others = list(outcomes)
        for other in others:
            same = outcomes[first] == outcomes[other] if len(outcomes[first]) == len(outcomes[other]) else None
            print(f"\n{other} vs {first}: identical results: {same if same is not None else 'n/a (different N)'}"
                  + (f" ({len(outcomes[first])} rows)" if same is not None else "")
                  + f"; rate {rates[other] / max(rates[first], 1e-9):.2f}x {first}'s")
        if args.resume_check:
            for executor in ("local", "processes"):
                if executor in outcomes:
                    resume_check(Path(tmp), args.attempts, args.tasks, outcomes[executor], executor)


if __name__ == "__main__":
    main()
elif __name__ == "__mp_main__":  # a worker process of the local executor (spawned): the same fake tool checks
    fake_tools()
