"""The Ray cluster scenarios of tests/test_ray_cluster.py, run in a private network namespace (``unshare --net``,
only loopback, so Ray binds 127.0.0.1): a head and two worker nodes started by ``ray start``, each its own
process tree as on its own machine. Every process of the cluster names the run's own temp folder or descends
from a raylet that does; ``stop_cluster`` ends exactly those (never ``ray stop``, which ends every Ray process
of the user). Not in a PID namespace of its own: sysmo's reaper of leftover tool servers
(``sysmo.sandbox.reaper``) tells a live owner by its pid, which must mean the same process inside and out.

1. A run on the head and node B (12 units, 4 at a time) answered by the fake OpenAI server; node B's raylet
   process tree is killed once B has stored an attempt and has another in flight (its model request made),
   while the head's replies wait. Then the same experiment by the local executor.
2. Node C joins without Java (its PATH lacks it; its ``ray start`` begins once node B is declared dead, during
   the local run of 1): ``sysmo run --executor ray`` stops before any unit in one line naming that node.

Arguments: the folder to write ``results.json`` into (the test reads and judges it) and Ray's temp folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

PORT = 6392
ADDRESS = f"127.0.0.1:{PORT}"
TASKS = ["starter/uml_class/library_loans", "starter/uml_class/hotel_booking", "starter/uml_class/bug_tracker"]
SAMPLES = 4
DELAY_S = 1.5  # each model reply: long enough that the killed node surely has attempts in flight
DIAGRAM = "```plantuml\n@startuml\nclass Book {\n  +title: String\n}\nclass Member\nBook --> Member\n@enduml\n```"


def loopback_up() -> None:
    """``ip link set lo up`` without iproute2: SIOCSIFFLAGS with IFF_UP | IFF_LOOPBACK | IFF_RUNNING."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH14x", b"lo", 0x1 | 0x8 | 0x40))


def ray_start(temp: Path, log: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """One node: ``ray start --block`` in a session of its own (its process group is the node's tree but for
    the worker processes, which its raylet starts in groups of their own)."""
    ray = Path(sys.executable).with_name("ray")
    command = [str(ray), "start", "--block", "--node-ip-address=127.0.0.1", "--num-cpus=1",
               "--object-store-memory=200000000", "--disable-usage-stats", f"--temp-dir={temp}", *args]
    return subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
                            env=env or os.environ.copy())


# how long the node-loss scenario waits for node B's first stored attempt (and holds the head's replies): only
# an upper bound for sequencing, so it costs nothing when B is quick; under load 10 with other test runs beside
# it, B's first attempt (its worker's imports, its PlantUML server in the sandbox) took over 180 s
SEQUENCE_WAIT_S = 360


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


def alive_nodes(ray) -> list[dict]:
    return [n for n in ray.nodes() if n["Alive"]]


def node_with(ray, resource: str) -> dict:
    return next(n for n in alive_nodes(ray) if resource in n["Resources"])


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def with_descendants(roots: set[int]) -> set[int]:
    """``roots`` and every process under them."""
    def parent(pid: int) -> int:
        try:
            return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return -1

    parents = {pid: parent(pid) for pid in (int(p) for p in os.listdir("/proc") if p.isdigit())}
    tree = set(roots)
    grown = True
    while grown:
        before = len(tree)
        tree |= {pid for pid, up in parents.items() if up in tree}
        grown = len(tree) > before
    return tree


def kill(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def kill_node(node: dict, start: subprocess.Popen) -> None:
    """SIGKILL the node's raylet and every process under it (its workers and actors), then its ``ray start``'s
    process group (the rest of the node)."""
    raylet = {pid for pid in (int(p) for p in os.listdir("/proc") if p.isdigit())
              if f"--raylet_socket_name={node['RayletSocketName']} " in command_line(pid)}
    kill(with_descendants(raylet))
    with contextlib.suppress(ProcessLookupError):
        os.killpg(start.pid, signal.SIGKILL)
    start.wait()


def stop_cluster(temp: Path) -> None:
    """End every process of the cluster whose Ray temp folder is ``temp``: those naming it (GCS, raylets, the
    head's services) and everything under them (workers and actors, which carry only a ``ray::`` title)."""
    marker = str(temp)
    kill(with_descendants({pid for pid in (int(p) for p in os.listdir("/proc") if p.isdigit())
                           if pid != os.getpid() and marker in command_line(pid)}))


def stored_rows(directory: Path) -> list[dict]:
    from sysmo.store import Store

    store = Store(directory / "results.sqlite")
    try:
        rows = [dict(row) for row in store.query("SELECT id, task_id, model, sample_index, status, n_rounds "
                                                 "FROM attempts ORDER BY task_id, sample_index")]
        for row in rows:
            card = store.scorecard(row["id"])
            row["scores"] = {stage.stage: stage.value for stage in card.stages} if card else None
        return rows
    finally:
        store.close()


def events_in(text: str) -> list[dict]:
    """The JSON log events among the captured stderr lines."""
    events = []
    for line in text.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
    return events


def main(out: Path, temp: Path) -> None:
    loopback_up()
    results: dict = {}
    # a PATH without java for node C: every other command of the PATH, linked into a folder of its own
    no_java = out / "bin-without-java"
    no_java.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        with contextlib.suppress(OSError):
            for name in os.listdir(folder):
                if name != "java" and not (no_java / name).exists():
                    (no_java / name).symlink_to(Path(folder) / name)
    # the head's GCS declares a node dead after 3 missed checks 0.5 s apart (defaults: 5 of 3 s)
    head_env = {**os.environ, "RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "3",
                "RAY_health_check_initial_delay_ms": "0"}
    started = time.monotonic()
    head = ray_start(temp, out / "head.log", "--head", f"--port={PORT}", "--include-dashboard=false", env=head_env)
    node_b = node_c = None
    try:
        import ray

        wait_for(lambda: connect(ray), 180, "the head")
        # one node at a time: ``ray start`` gives a raylet 30 s to register, which a loaded machine can miss
        node_b = join(ray, temp, out, "node_b", os.environ.copy())
        results["cluster_start_s"] = round(time.monotonic() - started, 1)
        no_java_env = {**os.environ, "PATH": str(no_java)}

        def start_node_c() -> subprocess.Popen:
            # node C joins once node B is declared dead (still one node joining at a time), while the same
            # experiment runs on the local executor, which needs no Ray node: its start-up and that run overlap
            wait_for(lambda: len(alive_nodes(ray)) == 1, 60, "node B to be declared dead")
            return ray_start(temp, out / "node_c.log", *node_args("node_c"), env=no_java_env)

        node_c = node_lost_mid_run(ray, out, results, node_b, start_node_c)
        # node C joins after the cluster run: the head, checked by that run, is not checked again in this process
        node_c = join(ray, temp, out, "node_c", no_java_env, started=node_c)
        missing_tool(ray, out, results)
        results["seconds"] = round(time.monotonic() - started, 1)
    except BaseException:  # Ray's own logs, for the test's failure message to point at
        with contextlib.suppress(OSError):
            shutil.copytree(temp / "session_latest" / "logs", out / "ray-logs", symlinks=True)
        raise
    finally:
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
        with contextlib.suppress(Exception):
            ray.shutdown()
        for start in (node_b, node_c, head):
            with contextlib.suppress(ProcessLookupError, AttributeError):
                os.killpg(start.pid, signal.SIGKILL)
        stop_cluster(temp)


def connect(ray) -> bool:
    """Connect this driver to the head, once its GCS answers and its raylet has registered."""
    try:
        ray.init(address=ADDRESS, log_to_driver=False, configure_logging=False)
        return True
    except Exception:  # noqa: BLE001 - not up yet (Ray raises RuntimeError, ConnectionError, Exception)
        return False


def node_args(name: str) -> list[str]:
    """``ray start``'s arguments of a worker node with the resource ``name`` (how the scenarios find it)."""
    return [f"--address={ADDRESS}", f'--resources={{"{name}": 1}}']


def join(ray, temp: Path, out: Path, name: str, env: dict[str, str],
         started: subprocess.Popen | None = None) -> subprocess.Popen:
    """Start a worker node with the resource ``name`` (or take its ``ray start`` already ``started``) and wait
    until it is live; once more if its ``ray start`` gave up."""
    for attempt in range(2):
        start = started if attempt == 0 and started else ray_start(temp, out / f"{name}.log", *node_args(name), env=env)
        deadline = time.monotonic() + 120
        while start.poll() is None and time.monotonic() < deadline:
            if any(name in n["Resources"] for n in alive_nodes(ray)):
                return start
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(start.pid, signal.SIGKILL)
    tail = " | ".join((out / f"{name}.log").read_text(errors="replace").splitlines()[-6:])
    raise TimeoutError(f"{name} did not join the cluster: {tail}")


def config_for(out: Path, name: str, **fields):
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig

    settings = dict(id="cluster1", output_dir=out / name, agents=["base_modeling"], samples=SAMPLES, concurrency=4,
                    executor="ray", ray_address=ADDRESS, scoring={"embedding": "token"},
                    tasks=TaskSelection(benchmarks=["starter"], ids=TASKS))
    settings.update(fields)
    return ExperimentConfig(**settings)


def missing_tool(ray, out: Path, results: dict) -> None:
    from sysmo.errors import SysmoError
    from sysmo.runner import run_experiment

    results["node_c"] = node_with(ray, "node_c")["NodeID"]
    started = time.monotonic()
    try:
        run_experiment(config_for(out, "missing-tool", models=["reference"]), progress=False)
        results["missing_tool_error"] = None
    except SysmoError as exc:
        results["missing_tool_error"] = f"{type(exc).__name__}: {exc}"
    results["missing_tool_s"] = round(time.monotonic() - started, 1)


def node_lost_mid_run(ray, out: Path, results: dict, node_b_start: subprocess.Popen,
                      after_cluster_run) -> subprocess.Popen:
    """Scenario 1; returns what ``after_cluster_run()`` returned, called between the cluster run and the local run."""
    from fake_openai import FakeOpenAI, reply

    from sysmo.runner import experiment, run_experiment

    node_b = node_with(ray, "node_b")
    results["node_b"] = node_b["NodeID"]
    b_label = f"(node {node_b['NodeID'][:8]})"
    captured = io.StringIO()
    b_killed = threading.Event()
    executors = []
    make_executor = experiment.executor_for

    def keep_executor(config):
        executors.append(make_executor(config))
        return executors[-1]

    def node_running(seed: int) -> str | None:
        """The node running the unit of ``seed`` (the executor's attempts in flight)."""
        executor = executors[0] if executors else None
        for unit, index in list(executor._in_flight.values()) if executor else []:
            if unit.seed == seed:
                return executor._nodes[index].label
        return None

    def answer(body: dict):
        # the head's replies wait until node B is killed: B runs units while the head holds its own, so B
        # surely stores one and starts another before it dies, whatever each node's start-up costs
        deadline = time.monotonic() + 60
        while (node := node_running(body.get("seed"))) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if node is None or b_label not in node:
            b_killed.wait(SEQUENCE_WAIT_S)
        return reply(DIAGRAM, delay_s=DELAY_S)

    units = len(TASKS) * SAMPLES
    with FakeOpenAI(default=answer) as server:
        model = {"model": "openai/fake-model", "api_base": server.base_url}

        def b_requested() -> int:
            """Node B's attempts in flight whose model request the server has (it answers them after DELAY_S)."""
            asked = {body.get("seed") for body in list(server.requests)}
            executor = executors[0] if executors else None
            return sum(1 for unit, index in list(executor._in_flight.values()) if executor
                       and b_label in executor._nodes[index].label and unit.seed in asked)

        def kill_b_with_attempts_in_flight() -> None:
            try:
                wait_for(lambda: executors and executors[0].returned[node_b_label()] >= 1 and b_requested() >= 1,
                         SEQUENCE_WAIT_S, "node B to store an attempt and ask for another")
                results["b_in_flight_at_kill"] = sum(1 for _, index in list(executors[0]._in_flight.values())
                                                     if b_label in executors[0]._nodes[index].label)
                results["returned_at_kill"] = dict(executors[0].returned)
                kill_node(node_b, node_b_start)
            finally:
                b_killed.set()

        def node_b_label() -> str:
            return next((node.label for node in executors[0]._nodes if b_label in node.label), "")

        killer = threading.Thread(target=kill_b_with_attempts_in_flight, daemon=True)
        killer.start()
        experiment.executor_for = keep_executor
        started = time.monotonic()
        try:
            with contextlib.redirect_stderr(captured):
                summary = run_experiment(config_for(out, "cluster", models=[model]), progress=True)
        finally:
            experiment.executor_for = make_executor
            b_killed.set()
        results["cluster_run_s"] = round(time.monotonic() - started, 1)
        killer.join(timeout=5)
        results["cluster_summary"] = {"ran": summary.ran, "passed": summary.passed, "errors": summary.errors,
                                      "stopped": summary.stopped}
        results["cluster_stderr"] = [line for line in captured.getvalue().splitlines() if not line.startswith("{")]
        results["cluster_events"] = [e for e in events_in(captured.getvalue()) if e.get("event", "").startswith("ray.")]
        results["requests_per_seed"] = {}
        for body in server.requests:
            key = str(body.get("seed"))
            results["requests_per_seed"][key] = results["requests_per_seed"].get(key, 0) + 1
        results["calls"] = server.calls
        following = after_cluster_run()
        started = time.monotonic()
        local = run_experiment(config_for(out, "local", models=[model], executor="local", ray_address=None),
                               progress=False)
        results["local_run_s"] = round(time.monotonic() - started, 1)
        results["local_summary"] = {"ran": local.ran, "passed": local.passed, "errors": local.errors}
    results["cluster_rows"] = stored_rows(out / "cluster" / "cluster1")
    results["local_rows"] = stored_rows(out / "local" / "cluster1")
    return following


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
