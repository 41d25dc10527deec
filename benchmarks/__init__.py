"""Benchmark tasks: the ``Task`` model, loaders for the published families, and our starter suite."""

from sysmo.benchmarks.task import (
    BuggyVariant,
    InvariantTemplate,
    SourceRef,
    Task,
    TaskInputs,
    TaskKind,
    TaskReferences,
    TraceSet,
)

__all__ = [
    "BuggyVariant",
    "InvariantTemplate",
    "SourceRef",
    "Task",
    "TaskInputs",
    "TaskKind",
    "TaskReferences",
    "TraceSet",
]
