"""Tasks for the agent tests: the starter suite's tasks, and a tiny TLA+ task with code and a recorded trace.

The TLA+ task is small on purpose (SANY + a short TLC simulation in about a second) so the many repair-loop
tests stay fast; every starter TLA+ task is still run end to end by the reference test.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from sysmo.contracts.artifact import Artifact, Language
from sysmo.benchmarks.registry import load_tasks
from sysmo.contracts.task import Task, TaskInputs, TaskKind, TaskReferences, TraceSet

STARTER = Path(__file__).resolve().parents[1] / "benchmarks" / "starter"
# one small task per text kind, the same across tests so the warm tool servers see few distinct models
TEXT_TASKS = {
    TaskKind.SYSML: "electric_kettle",
    TaskKind.UML_CLASS: "recipe_book",
    TaskKind.ARCHITECTURE: "greenhouse_monitoring",
}

LOCK_COUNTER_PY = '''\
import threading

class LockCounter:
    """Two threads take a lock, bump a shared counter modulo 3 and release the lock."""

    def __init__(self, log):
        self.lock = threading.Lock()
        self.owner = None
        self.count = 0
        self.log = log

    def work(self, name):
        with self.lock:
            self.owner = name
            self.log.emit({"event": "Acquire", "proc": name})
            self.count = (self.count + 1) % 3
            self.owner = None
            self.log.emit({"event": "Release", "proc": name, "count": self.count})
'''

LOCK_COUNTER_TLA = r"""---- MODULE LockCounter ----
EXTENDS Naturals
CONSTANTS Procs
VARIABLES lock, count, pc
vars == <<lock, count, pc>>

TypeOK == /\ lock \in {"free"} \cup Procs
          /\ count \in 0..2
          /\ pc \in [Procs -> {"idle", "locked"}]

Init == /\ lock = "free"
        /\ count = 0
        /\ pc = [p \in Procs |-> "idle"]

Acquire(p) == /\ pc[p] = "idle"
              /\ lock = "free"
              /\ lock' = p
              /\ pc' = [pc EXCEPT ![p] = "locked"]
              /\ UNCHANGED count

Release(p) == /\ pc[p] = "locked"
              /\ lock' = "free"
              /\ count' = (count + 1) % 3
              /\ pc' = [pc EXCEPT ![p] = "idle"]

Next == \E p \in Procs : Acquire(p) \/ Release(p)
Spec == Init /\ [][Next]_vars

Mutex == \A p, q \in Procs : (pc[p] = "locked" /\ pc[q] = "locked") => p = q
====
"""

LOCK_COUNTER_CFG = """SPECIFICATION Spec
CONSTANTS Procs = {p1, p2}
INVARIANT TypeOK
INVARIANT Mutex
"""

TRACE = """{"event": "Acquire", "proc": "t1"}
{"event": "Release", "proc": "t1", "count": 1}
{"event": "Acquire", "proc": "t2"}
{"event": "Release", "proc": "t2", "count": 2}
"""


def lock_counter_task(folder: Path) -> Task:
    """A TLA+ task with source code, one recorded NDJSON trace (written to ``folder``) and a reference."""
    folder.mkdir(parents=True, exist_ok=True)
    trace = folder / "trace-1.ndjson"
    trace.write_text(TRACE)
    return Task(
        id="test/tla/lock_counter",
        benchmark="test",
        kind=TaskKind.TLA,
        title="Lock-protected counter",
        inputs=TaskInputs(
            description="Two threads share a lock and a counter modulo 3. Actions: Acquire, Release.",
            source_files={"lock_counter.py": LOCK_COUNTER_PY},
            module_name="LockCounter",
            traces=TraceSet(files=[trace], description="one seeded run"),
        ),
        references=TaskReferences(
            model=Artifact(
                language=Language.TLA,
                files={"LockCounter.tla": LOCK_COUNTER_TLA, "LockCounter.cfg": LOCK_COUNTER_CFG},
            )
        ),
    )


def _folder_task(kind: TaskKind, name: str) -> Task:
    """A starter text task read straight from its folder (used while the starter loader is not installed)."""
    folder = STARTER / kind.value / name
    meta = yaml.safe_load((folder / "task.yaml").read_text())
    file_name = "model.sysml" if kind.language == Language.SYSML else "diagram.puml"
    return Task(
        id=f"starter/{kind.value}/{name}",
        benchmark="starter",
        kind=kind,
        title=meta.get("title", ""),
        inputs=TaskInputs(requirement=(folder / meta["requirement_file"]).read_text()),
        references=TaskReferences(
            model=Artifact(
                language=kind.language, files={file_name: (folder / meta["reference_file"]).read_text()}
            )
        ),
    )


def starter_tasks() -> list[Task]:
    """Every starter task: from the starter loader, else (text kinds only) from the folders."""
    tasks = load_tasks(families=["starter"])
    if tasks:
        return tasks
    return [
        _folder_task(TaskKind(kind.name), folder.name)
        for kind in sorted(STARTER.iterdir())
        if kind.is_dir() and kind.name in {k.value for k in TEXT_TASKS}
        for folder in sorted(kind.iterdir())
        if (folder / "task.yaml").is_file()
    ]


def text_task(kind: TaskKind) -> Task:
    """The small starter task of ``kind`` the repair-loop tests use."""
    wanted = TEXT_TASKS[kind]
    for task in starter_tasks():
        if task.kind == kind and task.id.rsplit("/", 1)[-1] == wanted:
            return task
    return _folder_task(kind, wanted)


def tla_task(folder: Path) -> Task:
    """The starter spinlock task (source code, traces, reference), else the tiny lock-counter task."""
    for task in starter_tasks():
        if task.id == "starter/tla/spinlock":
            return task
    return lock_counter_task(folder)


def task_of(kind: TaskKind, folder: Path) -> Task:
    return tla_task(folder) if kind == TaskKind.TLA else text_task(kind)
