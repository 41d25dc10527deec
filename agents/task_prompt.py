"""The first request for a task, shared by the agents: the task's inputs poured into the language's template."""

from __future__ import annotations

from pathlib import Path

from sysmo.agents.prompts import Prompt, load_prompt
from sysmo.benchmarks.task import Task, TaskKind

MAX_SOURCE_CHARS = 60_000
MAX_TRACE_EVENTS = 60


def module_name(task: Task) -> str:
    return task.inputs.module_name or task.id.rsplit("/", 1)[-1].replace("-", "_").title().replace("_", "")


def source_section(task: Task) -> str:
    if not task.inputs.source_files:
        return ""
    parts, used = ["Source code of the system:"], 0
    for name, code in task.inputs.source_files.items():
        if used + len(code) > MAX_SOURCE_CHARS:
            parts.append(f"(file {name} omitted: the source budget is used up)")
            continue
        parts.append(f"File `{name}`:\n```\n{code}\n```")
        used += len(code)
    return "\n".join(parts) + "\n"


def trace_excerpt(task: Task, max_events: int = MAX_TRACE_EVENTS, max_traces: int = 3) -> str:
    """A few recorded execution traces (NDJSON), cut to a budget of events."""
    traces = task.inputs.traces or task.references.traces
    if traces is None or not traces.files:
        return ""
    parts = []
    if task.inputs.trace_format:
        parts.append(f"Trace format:\n{task.inputs.trace_format}")
    budget = max_events
    for path in traces.files[:max_traces]:
        lines = Path(path).read_text().splitlines()
        if budget <= 0:
            break
        shown = lines[:budget]
        budget -= len(shown)
        more = f"\n... ({len(lines) - len(shown)} more events)" if len(lines) > len(shown) else ""
        parts.append(f"Trace `{Path(path).name}`:\n```\n" + "\n".join(shown) + f"\n```{more}")
    return "\n".join(parts) + "\n"


def task_prompt(task: Task, *, include_source: bool = True, include_traces: bool = False) -> tuple[str, Prompt]:
    """The user message asking for the model, and the template it came from (for its hash)."""
    template = load_prompt("common", f"task_{task.kind.value}")
    if task.kind == TaskKind.TLA:
        traces = trace_excerpt(task) if include_traces else ""
        text = template.fill(
            description=task.inputs.description or task.inputs.requirement or task.title,
            source_section=source_section(task) if include_source else "",
            trace_section=("Recorded execution traces of the system:\n" + traces) if traces else "",
            module_name=module_name(task),
        )
    else:
        text = template.fill(requirement=task.inputs.requirement or task.inputs.description or "")
    return text, template
