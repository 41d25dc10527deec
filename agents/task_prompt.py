"""The first request for a task, shared by the agents: the task's inputs poured into the language's template.

SysMoBench tasks carry their own prompts (``tasks/<t>/prompts/``); the reference harness sends them as they
are, filled with the task's values, and so do we:

- source-based requests (base_modeling, code_translation, metagpt, openhands) send ``direct_call``: the harness's
  ``direct_call`` method sends it, and its ``agent_based`` method sends it too for the first generation (its
  ``agent_based.txt`` is the *correction* template, filled with the previous spec and its errors);
- trace-based requests (trace_learning) send ``trace_based``;
- code_translation's repair rounds send the task's ``agent_based`` correction prompt (``harness_correction``),
  filled with the previous spec, its cfg, the tool's errors and our full diagnostics report.

Filling follows the harness's task loader: ``{file_path}`` and ``{focus}`` are the selected source file's path
and description (lists when the task models several files), ``{source_code}`` is each file as
``===== FILE: <path> =====`` / ``DESCRIPTION: <description>`` / its code, joined by blank lines;
``{traces}`` is ``## Execution #i:`` then each trace file of the execution in a code block, and
``{trace_format}`` the task's trace-format document. ``{{``/``}}`` become single braces, as ``str.format`` does.

After the benchmark's text comes our addition (``common/task_tla_harness.md``): where the source is missing and
why, the task's invariant templates (what the grader will check), the cfg requirements of the task's own
``phase2_config`` prompt, and the reply format (```tla and ```cfg blocks). The task's core actions, exclusions
and output rules are never cut.

>>> text, template = task_prompt(task)  # sysmobench/spin
>>> "MANDATORY CORE ACTIONS" in text and "EXPLICITLY EXCLUDED" in text
True
"""

from __future__ import annotations

import re
from pathlib import Path

from typing import TYPE_CHECKING

from sysmo.agents.prompts import Prompt, load_prompt
from sysmo.contracts.task import Task, TaskKind

if TYPE_CHECKING:
    from sysmo.graphs.context import AgentContext

MAX_SOURCE_CHARS = 60_000
MAX_TRACE_EVENTS = 60
MAX_HARNESS_TRACE_CHARS = 40_000  # the harness sends every trace; a PGo run's logs are far beyond a context
MIN_TRACE_FILE_CHARS = 2_000
SOURCE_BASED = "direct_call"
TRACE_BASED = "trace_based"
CFG_PROMPT = "phase2_config"
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NUMBERED = re.compile(r"^\s*\d+\.\s")


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


def fill_harness(template: str, values: dict[str, str]) -> str:
    """``str.format`` as the harness applies it, but an unknown ``{name}`` is left as written, not an error."""

    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return values.get(match.group(1), token)

    return _PLACEHOLDER.sub(one, template)


def _as_harness_value(items: list[str]) -> str:
    """One item as itself, several as the harness's ``str(list)``."""
    return items[0] if len(items) == 1 else str(items)


def harness_source_code(task: Task, budget: int = MAX_SOURCE_CHARS) -> str:
    """The task's source files as the harness concatenates them, within a character budget."""
    descriptions: dict[str, str] = task.labels.get("source_file_descriptions") or {}
    parts, used = [], 0
    for path, code in task.inputs.source_files.items():
        header = f"===== FILE: {path} =====\n" + (f"DESCRIPTION: {descriptions[path]}\n" if descriptions.get(path) else "")
        if used + len(code) > budget:
            parts.append(header + f"(omitted: the source budget of {budget} characters is used up)")
            continue
        parts.append(header + code)
        used += len(code)
    return "\n\n".join(parts)


def missing_source_reason(task: Task) -> str | None:
    """Why a TLA+ task has no source code for the model, or None when it has some."""
    if task.kind != TaskKind.TLA or task.inputs.source_files:
        return None
    source = task.inputs.source
    if source is None or not (source.url or source.files):
        return "the task names no source repository"
    where = source.url or "the upstream repository"
    if source.checkout is not None:
        return f"the checkout {source.checkout} lacks {', '.join(source.files) or 'the listed files'}"
    return f"no checkout of {where} was given (--sources-dir or source_checkouts in the config)"


def harness_traces(task: Task, budget: int = MAX_HARNESS_TRACE_CHARS) -> str:
    """``## Execution #i:`` blocks as the harness writes them; a folder of per-process logs is one execution."""
    traces = task.inputs.traces or task.references.traces
    if traces is None or not traces.files:
        return ""
    executions: dict[Path, list[Path]] = {}
    for path in traces.files:
        key = Path(path).parent if traces.format == "pgo" else Path(path)
        executions.setdefault(key, []).append(Path(path))
    per_file = max(MIN_TRACE_FILE_CHARS, budget // len(traces.files))  # every execution gets a share
    out, used = [], 0
    for i, files in enumerate(executions.values(), start=1):
        if used >= budget:
            out.append(f"({len(executions) - i + 1} more executions omitted: the trace budget is used up)\n")
            break
        block = [f"## Execution #{i}:"]
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            room = min(per_file, max(0, budget - used))
            if len(text) > room:
                cut = text[:room].rsplit("\n", 1)[0]
                text = cut + f"\n... ({len(text.splitlines()) - len(cut.splitlines())} more lines)"
            used += len(text)
            block.append(f"{path.name}:\n```\n{text}\n```")
        out.append("\n".join(block) + "\n")
    return "\n".join(out)


def cfg_requirements(task: Task) -> str:
    """The numbered requirements of the task's ``phase2_config`` prompt, less its bare-output rule."""
    text = task.inputs.prompts.get(CFG_PROMPT, "")
    section = text.split("## Requirements:", 1)[1].split("\n## ", 1)[0] if "## Requirements:" in text else ""
    kept = [
        line.strip() for line in section.splitlines()
        if _NUMBERED.match(line) and "raw .cfg" not in line and "no markdown" not in line
    ]
    if not kept:
        return "- SPECIFICATION Spec, CONSTANTS with small finite values, and INVARIANT TypeOK."
    return "\n".join(f"- {_NUMBERED.sub('', line, count=1)}" for line in kept)


def invariant_section(task: Task) -> str:
    if not task.references.invariants:
        return ""
    lines = ["The grader checks these properties of the task (invariant templates) against your specification, in",
             "your own names: keep the state they talk about observable (do not define them yourself)."]
    lines += [f"- {t.name} ({t.type}): {t.natural_language}" for t in task.references.invariants]
    return "\n".join(lines) + "\n"


def harness_template(task: Task, include_traces: bool) -> tuple[str, str] | None:
    """(name, text) of the benchmark's own prompt for this kind of request, when the task has one."""
    name = TRACE_BASED if include_traces else SOURCE_BASED
    text = task.inputs.prompts.get(name)
    return (name, text) if text else None


def harness_prompt(task: Task, name: str, text: str) -> str:
    """The benchmark's prompt filled as its harness fills it."""
    descriptions: dict[str, str] = task.labels.get("source_file_descriptions") or {}
    files = (task.inputs.source.files if task.inputs.source else []) or list(task.inputs.source_files)
    reason = missing_source_reason(task)
    values = {
        "language": str(task.labels.get("source_language") or ""),
        "description": task.inputs.description or task.title,
        "system_type": str(task.labels.get("system_type") or task.domain or ""),
        "file_path": _as_harness_value(files) if files else "(no file named)",
        "focus": _as_harness_value([descriptions.get(f, "") for f in files]) if files else "",
        "source_code": harness_source_code(task) if not reason else f"(source code not available: {reason})",
        "traces": harness_traces(task) if name == TRACE_BASED else "",
        "trace_format": task.inputs.trace_format or "",
    }
    return fill_harness(text, values)


CORRECTION = "agent_based"
CORRECTION_FORMAT = (
    "\n---\nOutput format: this replaces only the JSON output format above. Reply with the corrected module in "
    "a ```tla code block and the configuration in a ```cfg code block."
)


def harness_correction(task: Task, *, spec: str, cfg: str, errors: list[str], syntax: list[str],
                       semantic: list[str], output: str, attempt: int, max_attempts: int) -> str | None:
    """The task's ``agent_based.txt`` correction prompt filled as the harness's agent_based method fills it
    (values escaped against ``str.format``, as the harness does), with our reply-format line; None without one."""
    template = task.inputs.prompts.get(CORRECTION) if task.kind == TaskKind.TLA else None
    if not template:
        return None
    summary = "; ".join(f"{label} ({len(items)})" for label, items in (("Syntax errors", syntax),
                                                                        ("Semantic errors", semantic)) if items)
    values = {
        "language": str(task.labels.get("source_language") or ""),
        "description": task.inputs.description or task.title,
        "system_type": str(task.labels.get("system_type") or task.domain or ""),
        "current_specification": spec,
        "current_config": cfg,
        "error_summary": summary or ("; ".join(errors[:3]) if errors else "None"),
        "syntax_errors": "\n".join(syntax) or "None",
        "semantic_errors": "\n".join(semantic) or "None",
        "validation_output": output,
        "attempt_number": str(attempt),
        "max_attempts": str(max_attempts),
    }
    return fill_harness(template, values) + CORRECTION_FORMAT


def task_prompt_for(ctx: AgentContext, *, include_source: bool = True,
                    include_traces: bool = False) -> tuple[str, Prompt]:
    """``task_prompt`` for the context's task, stated with the context's ``--strategy`` (if any)."""
    return task_prompt(ctx.task, include_source=include_source, include_traces=include_traces,
                       strategy=ctx.strategy, data_dir=ctx.data_dir)


def task_prompt(task: Task, *, include_source: bool = True, include_traces: bool = False,
                strategy: str | None = None, data_dir: Path | str | None = None) -> tuple[str, Prompt]:
    """The user message asking for the model, and the template it came from (for its hash); ``strategy``
    (``sysmo.agents.strategies``) restates it zero-shot, few-shot, chain-of-thought or grammar-guided."""
    text, template = _own_task_prompt(task, include_source=include_source, include_traces=include_traces)
    if strategy is None:
        return text, template
    from sysmo.agents.strategies import apply_strategy

    text, used = apply_strategy(task, text, strategy, data_dir)
    if task.kind == TaskKind.SYSML:  # the published template replaces sysmo's own
        return text, used[0]
    return text, Prompt(agent=template.agent, name=f"{template.name}+{strategy}",
                        text=template.text + "".join(p.text for p in used))


def _own_task_prompt(task: Task, *, include_source: bool, include_traces: bool) -> tuple[str, Prompt]:
    if task.kind == TaskKind.TLA:
        found = harness_template(task, include_traces)
        if found is not None:
            name, text = found
            addition = load_prompt("common", "task_tla_harness")
            reason = missing_source_reason(task) if name == SOURCE_BASED and include_source else None
            filled = addition.fill(
                harness_prompt=harness_prompt(task, name, text).strip(),
                source_note=(f"The system's source code is not available ({reason}): model it from the description "
                             "above.\n") if reason else "",
                invariant_section=invariant_section(task),
                cfg_requirements=cfg_requirements(task),
                module_name=module_name(task),
            )
            return filled, Prompt(agent=task.id, name=name, text=text + "\n" + addition.text)
        template = load_prompt("common", "task_tla")
        traces = trace_excerpt(task) if include_traces else ""
        text = template.fill(
            description=task.inputs.description or task.inputs.requirement or task.title,
            source_section=source_section(task) if include_source else "",
            trace_section=("Recorded execution traces of the system:\n" + traces) if traces else "",
            module_name=module_name(task),
        )
        return text, template
    template = load_prompt("common", f"task_{task.kind.value}")
    text = template.fill(requirement=task.inputs.requirement or task.inputs.description or "")
    return text, template
