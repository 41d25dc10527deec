"""What every node of a Ray cluster must have before a run's units go to it: the tools its tasks need and the
data paths they name, checked on each node by a task pinned to it (``check_nodes``).

Nodes are separate machines: nothing of the driver's reaches them but the units themselves (a task travels
with its unit, its text inline) and the environment the executor passes (``ray_executor.driver_environment``).
Files a task names by path (traces, recorded windows, source checkouts, a replay model's published outputs)
are read where the unit runs, so they must be at the same path on every node (a shared mount); tools are
found through the node's own installation (``sysmo tools install`` there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import DataMissingError, SysmoError, ToolMissingError
from sysmo.log import get_logger
from sysmo.tools.status import ToolStatus

log = get_logger(__name__)

# the doctor's self-checks (sysmo.tools.doctor_checks.SELF_CHECKS) a run of each kind of task uses: Java and the
# sandbox for every kind, then the kind's checker
BASE_TOOLS = ["java", "sandbox"]
TOOLS_BY_KIND: dict[TaskKind, list[str]] = {
    TaskKind.TLA: ["SANY", "TLC"],
    TaskKind.SYSML: ["OpenSysML"],
    TaskKind.UML_CLASS: ["PlantUML"],
    TaskKind.ARCHITECTURE: ["PlantUML"],
}
# nodes found ready in this process, with the tools and paths they were checked for: a process that runs several
# experiments on the cluster (``sysmo reproduce``) checks a node once for the same needs
_READY: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = set()
CHECK_TIMEOUT_S = 300.0  # a node's doctor starts a JVM per tool; on a loaded machine that takes tens of seconds
SHOWN_PATHS = 3  # missing paths named in the error (the rest are counted)


class ClusterNode(BaseModel):
    """A live node of the cluster that can run units (it has CPUs)."""

    node_id: str
    address: str
    hostname: str
    cpus: float

    @property
    def label(self) -> str:
        """How messages name the node: host, address and the start of Ray's node id (``ray status`` shows it)."""
        host = f"{self.hostname} " if self.hostname and self.hostname != self.address else ""
        return f"{host}{self.address} (node {self.node_id[:8]})"


class NodeReadiness(BaseModel):
    """What a node lacks: its failing tool self-checks and the data paths it cannot see."""

    failing: list[ToolStatus]
    missing_paths: list[str]


def unit_nodes(ray: Any) -> list[ClusterNode]:
    """The cluster's live nodes with CPUs, in a stable order (a head started with ``--num-cpus 0``, as KubeRay
    does, runs no units and is left out)."""
    nodes = [ClusterNode(node_id=n["NodeID"], address=n.get("NodeManagerAddress", ""),
                         hostname=n.get("NodeManagerHostname", ""), cpus=float(n.get("Resources", {}).get("CPU", 0)))
             for n in ray.nodes() if n.get("Alive")]
    return sorted((n for n in nodes if n.cpus > 0), key=lambda n: (n.address, n.node_id))


def tools_for(tasks: list[Task]) -> list[str]:
    """The self-checks a run of ``tasks`` needs on each node, in the doctor's order."""
    wanted = set(BASE_TOOLS).union(*(TOOLS_BY_KIND[task.kind] for task in tasks))
    from sysmo.tools.doctor_checks import SELF_CHECKS

    return [name for name, _, _ in SELF_CHECKS if name in wanted]


def _paths_in(value: Any, found: set[str]) -> None:
    if isinstance(value, Path):
        found.add(str(value))
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            _paths_in(getattr(value, name), found)
    elif isinstance(value, dict):
        for item in value.values():
            _paths_in(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _paths_in(item, found)


def data_paths(tasks: list[Task], models: list[str], data_dir: Path | None) -> list[str]:
    """The files and folders a node reads to run ``tasks``: every path a task names, and the data directory when
    a model replays published outputs from it (``data_dir``: the run's, resolved as the driver resolves it)."""
    found: set[str] = set()
    for task in tasks:
        _paths_in(task, found)
    if data_dir is not None and any(model.startswith("replay/") for model in models):
        found.add(str(data_dir))
    return sorted(found)


def node_readiness(environment: dict[str, str], tools: list[str], paths: list[str]) -> dict[str, Any]:
    """Run on a node (a Ray task pinned to it): the doctor's self-checks of ``tools`` in a process of their own
    (the tool servers they start end with it) under the driver's ``environment``, and which ``paths`` the node
    cannot see. A plain dict, so the driver needs no pickled class of this module."""
    completed = subprocess.run([sys.executable, "-m", "sysmo.tools.doctor_checks", *tools], capture_output=True,
                               text=True, env={**os.environ, **environment}, timeout=CHECK_TIMEOUT_S)
    try:
        statuses = [ToolStatus.model_validate(s) for s in json.loads(completed.stdout)]
    except ValueError:  # the doctor did not start (no sysmo on the node): its error is the one status
        why = (completed.stderr.strip().splitlines() or [f"exit code {completed.returncode}"])[-1]
        statuses = [ToolStatus(name="sysmo", ok=False, message=f"`{sys.executable} -m sysmo.tools.doctor_checks` "
                               f"failed: {why}")]
    missing = [path for path in paths if not os.path.exists(path)]
    return NodeReadiness(failing=[s for s in statuses if not s.ok], missing_paths=missing).model_dump(mode="json")


def first_sentence(message: str) -> str:
    """A tool's failure in short: its message's first line, up to its first full stop."""
    line = (message.splitlines() or ["failed"])[0]
    return line.split(". ", 1)[0].rstrip(".")


def check_nodes(ray: Any, nodes: list[ClusterNode], environment: dict[str, str], tools: list[str],
                paths: list[str]) -> None:
    """Check every node at once (one task pinned to each, a node found ready earlier in this process for the same
    needs excepted); nodes that lack a tool or a path stop the run with one line naming each and what it lacks."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    check = ray.remote(num_cpus=0, max_retries=0)(node_readiness)
    needs = (tuple(tools), tuple(paths))
    nodes = [node for node in nodes if (node.node_id, *needs) not in _READY]
    pending = {check.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False)).remote(
        environment, tools, paths): node for node in nodes}
    log.info("ray.check_nodes", nodes=[n.label for n in nodes], tools=tools, paths=len(paths))
    try:
        answers = {node.node_id: ray.get(ref, timeout=CHECK_TIMEOUT_S + 30) for ref, node in pending.items()}
    except Exception as exc:  # noqa: BLE001 - Ray's errors (a node lost during the check, a timeout)
        raise SysmoError(f"the Ray cluster's nodes could not be checked: {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
    lacking_tools, lacking_data = [], []
    for node in nodes:
        readiness = NodeReadiness.model_validate(answers[node.node_id])
        if readiness.failing:
            lacks = "; ".join(f"{s.name}: {first_sentence(s.message)}" for s in readiness.failing)
            lacking_tools.append(f"node {node.label} cannot run the tools ({lacks})")
        if readiness.missing_paths:
            more = len(readiness.missing_paths) - SHOWN_PATHS
            shown = ", ".join(readiness.missing_paths[:SHOWN_PATHS]) + (f" and {more} more" if more > 0 else "")
            lacking_data.append(f"node {node.label} cannot read the run's data: {shown}")
        if not readiness.failing and not readiness.missing_paths:
            _READY.add((node.node_id, *needs))
    if lacking_tools:
        raise ToolMissingError("; ".join(lacking_tools) + ": run `sysmo tools install` and `sysmo tools doctor` "
                               "on that node")
    if lacking_data:
        raise DataMissingError("; ".join(lacking_data) + ": mount the benchmark data at the same path on every "
                               "node (docs/ray.md)")
