"""``--executor ray``: the same work units on a Ray cluster, with the local executor's budget caps, stop handling,
summary, progress and store writes (``RunState``).

A pool of actors (one per node of the cluster, or ``--ray-workers``), each with one ``UnitRunner`` kept for the whole run (LLM clients and their
cache, warm tool servers, imports paid once per actor, not per attempt). An actor runs an attempt with its
steps recorded in memory (serialised as they come), scores it (the tool-heavy part stays on the workers) and
serialises its record into the store's rows (``AttemptRecord``); the driver's writer thread stores the
attempt's steps, artifacts, record and score exactly as for the local executor, writing the workers' bytes as
they are, so only the driver touches results.sqlite and checkpoints.sqlite, and a run can be resumed with
either executor.

A unit is started only while ``RunState.may_start()``: at most ``concurrency`` attempts are in flight, so a
budget cap stops a Ray run as early as a local one. On Ctrl-C no new unit starts and the attempts in flight are
finished and stored; a second Ctrl-C kills the actors (what was stored stays, resume runs the rest). The
driver's environment (``SYSMO_*``, provider keys and bases, see ``driver_environment``) is set in every actor
before it builds anything, so workers find the same tool jars, caches and API keys.

On a cluster (``--ray-address``) each actor is pinned to its node, and every node is checked before the first
unit (``ray_cluster.check_nodes``: the tools and the data paths the run needs). A node lost mid-run takes only
its attempts in flight: what it returned is stored, and each lost unit runs once more on the other nodes (a
unit lost twice is a failed unit, so a unit that kills its node cannot take the cluster down node by node).
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter, deque
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from sysmo.errors import ConfigError, SysmoError
from sysmo.log import get_logger
from sysmo.runner.collector import fewer_collections
from sysmo.runner.executor import RunState, UnitKey, decode_rows, rescore_stored, unit_key
from sysmo.runner.ray_cluster import ClusterNode, check_nodes, data_paths, tools_for, unit_nodes
from sysmo.runner.results import QUEUED
from sysmo.runner.units import WorkUnit

log = get_logger(__name__)

RAY_PIN = "ray==2.60.0"
# driver settings a worker needs: sysmo's own settings, the LLM providers' keys and endpoints, caches
PASSED_ENV = re.compile(r"^(SYSMO_.*|LITELLM_.*|OPENAI_.*|ANTHROPIC_.*|AZURE_.*|GEMINI_.*|MISTRAL_.*|GROQ_.*"
                        r"|TOGETHER.*|DEEPSEEK_.*|OPENROUTER_.*|OLLAMA_.*|HF_.*|XDG_CACHE_HOME|JAVA_HOME"
                        r"|.*_API_KEY|.*_API_BASE|.*_BASE_URL)$")
WAIT_S = 0.2  # how often the driver looks at a stop request while attempts run


def driver_environment() -> dict[str, str]:
    """The driver's environment variables that workers must see (``PASSED_ENV``)."""
    return {k: v for k, v in os.environ.items() if PASSED_ENV.match(k)}


class UnitActor:
    """One Ray worker process of the run: a ``UnitRunner`` kept across its attempts."""

    def __init__(self, config_json: str, directory: str, environment: dict[str, str]) -> None:
        os.environ.update(environment)
        from sysmo.config import settings
        from sysmo.runner.config import ExperimentConfig
        from sysmo.runner.unit_runner import UnitRunner

        settings.cache_clear()  # settings read after the driver's environment is in place
        self.config = ExperimentConfig.model_validate_json(config_json)
        self.runner = UnitRunner(self.config, Path(directory))
        self.tasks: dict[str, Any] | None = None  # the run's tasks by id, fetched once from the object store
        # a process of its own for the run's attempts: the collector as in the driver's run (``fewer_collections``)
        # for the actor's life, once the agents (and LangGraph) are imported
        from sysmo.agents.registry import all_agents

        all_agents()
        self._collections = fewer_collections()
        self._collections.__enter__()

    def environment(self, name: str) -> str | None:
        return os.environ.get(name)

    def ready(self) -> None:
        """Answers once the actor is built (its imports and runner): the driver sends units only to ready actors."""

    async def run(self, key: UnitKey, tasks: list[Any]) -> tuple[Any, list[Any] | None, str | None, list[str]]:
        """The attempt of the unit ``key`` (``unit_key``): its rows for the store (``AttemptRecord``), its
        recorded steps (not written here) and, if the run scores, its score. ``tasks`` holds the reference of
        the run's tasks in the object store (fetched once per actor: a unit travels as its key, not with its
        task). An async method: the actor runs several units at once on its event loop, as the local executor
        does."""
        if self.tasks is None:
            self.tasks = await tasks[0]
        task_id, *rest = key
        return await self.runner.arun_rows(WorkUnit(self.tasks[task_id], *rest))

    def close(self) -> None:
        self.runner.close()
        self._collections.__exit__(None, None, None)


def start_ray(address: str | None, num_cpus: int) -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"--executor ray needs Ray: pip install 'sysmo[ray]' ({RAY_PIN})") from exc
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
                 num_cpus=None if address else num_cpus, configure_logging=False)
    return ray


class RayExecutor:
    def __init__(self) -> None:
        self._ray: Any = None
        self._actors: list[Any] = []
        self._nodes: list[ClusterNode] = []  # the node of each actor
        self.returned: Counter[str] = Counter()  # attempts returned per node (a cluster's spread) in this run
        self._in_flight: dict[Any, tuple[WorkUnit, int]] = {}

    def start(self, config: Any, directory: Path) -> None:
        """Start Ray and the actors (asynchronously: they import and build while the driver prepares the run)."""
        ray = self._ray = start_ray(config.ray_address, config.concurrency)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = unit_nodes(ray)
        if not nodes:
            raise ConfigError(f"the Ray cluster at {config.ray_address or 'this machine'} has no live node with "
                              "CPUs to run units on: start one with `ray start --address HEAD:PORT`")
        # by default one actor per node, a local executor's worth (its tool slots sized to the node's cores, one
        # set of warm tool servers); ``ray_workers`` asks for more, dealt round the nodes. Each runs its share of
        # the ``concurrency`` attempts at once. Pinned (not soft): an actor never moves to a node unchecked.
        size = max(1, min(config.concurrency, config.ray_workers or len(nodes)))
        self._nodes = [nodes[index % len(nodes)] for index in range(size)]
        config_json, environment = config.model_dump_json(), driver_environment()
        for node in self._nodes:
            share = sum(1 for other in self._nodes if other.node_id == node.node_id)
            placed = ray.remote(num_cpus=min(1, node.cpus / share), max_concurrency=config.concurrency,
                                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False))
            self._actors.append(placed(UnitActor).remote(config_json, str(directory), environment))

    def run(self, pending: list[WorkUnit], state: RunState) -> None:
        config = state.config
        if self._ray is None:
            self.start(config, state.summary.directory)
        try:
            if config.ray_address and pending:  # a cluster: its nodes are other machines
                self._check_nodes(pending, config)
            self._schedule(self._ray, self._actors, pending, state)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the actors (their tool servers go with them); Ray itself stays up for the process."""
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors, self._nodes = [], []

    def _check_nodes(self, pending: list[WorkUnit], config: Any) -> None:
        """The tools and data paths of the pending units' tasks, on every node with an actor."""
        from sysmo.benchmarks.datadir import resolve_data_dir

        tasks = list({unit.task.id: unit.task for unit in pending}.values())
        nodes = list({node.node_id: node for node in self._nodes}.values())
        check_nodes(self._ray, nodes, driver_environment(), tools_for(tasks),
                    data_paths(tasks, config.model_names, resolve_data_dir(config.data_dir)))

    def _schedule(self, ray: Any, actors: list[Any], pending: list[WorkUnit], state: RunState) -> None:
        from ray.exceptions import RayActorError

        config = state.config
        load: dict[int, int] = {}  # attempts in flight per live actor that is ready
        starting = {actor.ready.remote(): index for index, actor in enumerate(actors)}  # actors being built
        failures: list[str] = []  # actors that died before they were ready, and why
        in_flight: dict[Any, tuple[WorkUnit, int]] = {}  # (unit, actor) of each attempt sent
        self._in_flight = in_flight
        storing: deque[tuple[Future, Any]] = deque()  # (writer's future, attempt) in the order handed over
        queue = list(reversed(pending))
        rerun: set[str] = set()  # units lost with their node once, and sent again
        self.returned = Counter()
        tasks = [ray.put({unit.task.id: unit.task for unit in pending})]  # a list: the actor fetches it once
        started = time.monotonic()
        log.info("ray.start", units=len(pending), actors=len(actors), address=config.ray_address or "local")

        def look_at_starting(timeout_s: float) -> None:
            """Actors that became ready join the pool (a unit never waits behind an actor still importing)."""
            if not starting:
                return
            done, _ = ray.wait(list(starting), num_returns=len(starting), timeout=timeout_s)
            for ref in done:
                index = starting.pop(ref)
                node = self._nodes[index].label
                try:
                    ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - its node died, or building the actor failed
                    cause = getattr(exc, "cause", None) or exc
                    why = f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}"
                    log.warning("ray.actor_failed", node=node, error=why)
                    failures.append(f"node {node}: {why}")
                    continue
                load[index] = 0
                log.info("ray.actor_ready", node=node, seconds=round(time.monotonic() - started, 2))

        def count_stored(block: bool = False) -> None:
            """Count the attempts the writer has committed (all of them with ``block``)."""
            while storing and (block or storing[0][0].done()):
                future, attempt = storing.popleft()
                future.result()  # a failed write (a full disk) fails the run
                state.finished(attempt)

        def lost(unit: WorkUnit, index: int, error: Exception) -> None:
            """The actor ``index`` died with its node (or on its own): no unit goes to it again, and ``unit``,
            which it was running, runs again elsewhere, once."""
            node = self._nodes[index].label
            if load.pop(index, None) is not None:
                log.warning("ray.node_lost", node=node, error=str(error).splitlines()[0] if str(error) else "")
                state.bar.note(f"node {node} lost; its attempts in flight run again")
                failures.append(f"node {node}: lost")
            if unit.attempt_id in rerun:
                state.failed(SysmoError(f"unit {unit.attempt_id} was lost with its node twice ({node}); "
                                        f"resume the run to try it again"))
                return
            rerun.add(unit.attempt_id)
            log.warning("ray.unit_rerun", unit=unit.attempt_id, node=node)
            queue.append(unit)  # the next to start

        try:
            while queue or in_flight:
                look_at_starting(0)
                if queue and not load and not starting:
                    raise SysmoError("no node of the Ray cluster can run this run's units (" + "; ".join(failures[:3])
                                     + "): what was finished is stored; `sysmo run --resume` runs the rest")
                while queue and load and len(in_flight) < config.concurrency and state.may_start():
                    unit = queue.pop()
                    if unit.attempt_id in state.attempted:  # stored before an interruption: only its score is missing
                        rescore_stored(unit, state)
                        continue
                    index = min(load, key=load.__getitem__)
                    load[index] += 1
                    in_flight[actors[index].run.remote(unit_key(unit), tasks)] = (unit, index)
                state.bar.running = len(in_flight)
                if not in_flight:
                    if queue and state.may_start():  # no actor is ready yet
                        look_at_starting(WAIT_S)
                        continue
                    break
                refs = list(in_flight)
                done, rest = ray.wait(refs, num_returns=1, timeout=WAIT_S)
                if done and rest:  # and whatever else is ready
                    done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
                for ref in done:
                    unit, index = in_flight.pop(ref)
                    if index in load:
                        load[index] -= 1
                    try:
                        attempt, record, steps, card, events = decode_rows(state, ray.get(ref))
                    except RayActorError as exc:  # the actor's process or node is gone
                        lost(unit, index, exc)
                        continue
                    except Exception as exc:  # noqa: BLE001 - a worker failure is recorded, the run goes on
                        cause = getattr(exc, "cause", None) or exc  # a RayTaskError wraps the worker's exception
                        log.warning("ray.unit_failed", unit=unit.attempt_id, error=f"{type(cause).__name__}: {cause}")
                        state.failed(cause)
                        continue
                    self.returned[self._nodes[index].label] += 1
                    state.came_back(unit, attempt)
                    future = state.writer.keep(unit, attempt, steps, record)
                    if card is not None:
                        future = state.writer.save_score(attempt, card, events)  # written after the record
                    storing.append((future, attempt))
                state.bar.running = len(in_flight)  # before the progress line of what came back
                count_stored()
                if len(storing) > QUEUED:  # the writer is behind: wait for it rather than hold more
                    storing[0][0].result()
                    count_stored()
            count_stored(block=True)
        except BaseException:
            # an abort (second Ctrl-C) or a failure: the attempts in flight end with their actors (``close``;
            # Ray takes no forced cancel of an actor's task), stored work stays, resume runs the rest
            log.warning("ray.aborted", in_flight=len(in_flight))
            raise
        log.info("ray.done", seconds=round(time.monotonic() - started, 2), rerun=len(rerun),
                 by_node=dict(self.returned))
