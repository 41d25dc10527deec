"""trace_learning: infer the TLA+ model from recorded execution traces alone (no source code), then repair.

A deterministic first stage surveys the traces (event kinds, their fields, how often each occurs) so the
model sees the whole alphabet of events even when only an excerpt of the traces fits in the prompt. NDJSON
events are named by their ``event``/``action``/... key; PGo (TraceLink) records by ``<archetype>.<label>``, the
label their ``.pc`` read names (aborted sections apart), with the archetype variables they read or write as
fields.

Its in-loop check adds trace validation (``agents.trace_check``): once a round's spec passes SANY and the
short TLC simulation, the task's traces are replayed against it, and a rejected trace fails the round; the
repair request then carries the first failing trace line, the logged state against the spec's state, and
the mapping used. A spec that parses and runs but does not conform is repaired, not accepted.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from sysmo.agents.prompts import load_prompt
from sysmo.agents.registry import LoopCheck, register_agent
from sysmo.agents.stages import remember, with_scratch
from sysmo.agents.task_prompt import task_prompt_for
from sysmo.agents.trace_check import trace_validation_check
from sysmo.contracts.task import Task, TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.graphs.loop import build_repair_graph
from sysmo.graphs.state import AgentState
from sysmo.tools.tla.pgo_trace import record_event, record_fields

NAME = "trace_learning"
EVENT_KEYS = ("event", "action", "type", "kind", "op", "name")
TRACE_VALIDATION = LoopCheck(
    "trace_validation",
    "trace validation: the task's traces replayed through TLC (name-based mapping); a rejected trace fails the "
    "round with its first failing line, the logged state against the spec's, and the mapping used",
    trace_validation_check,
)


def event_of(record: dict[str, Any]) -> tuple[str, list[str]]:
    """A trace record's event name and its fields: PGo records by archetype and label, NDJSON by its event key."""
    pgo = record_event(record)
    if pgo is not None:
        return pgo, record_fields(record)
    key = next((k for k in EVENT_KEYS if isinstance(record.get(k), str)), None)
    return (record[key] if key else "(unnamed)"), [k for k in record if k != key]


def survey_traces(task: Task) -> dict[str, Any]:
    """Event kinds with their counts and field names, over every trace file of the task."""
    traces = task.inputs.traces or task.references.traces
    kinds: Counter[str] = Counter()
    fields: dict[str, set[str]] = {}
    files, unreadable, events = 0, 0, 0
    for path in traces.files if traces else []:
        try:
            lines = Path(path).read_text().splitlines()
        except OSError:
            unreadable += 1
            continue
        files += 1
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # PGo logs and headers are not NDJSON: the excerpt still shows them
            if not isinstance(record, dict):
                continue
            events += 1
            kind, names = event_of(record)
            kinds[kind] += 1
            fields.setdefault(kind, set()).update(names)
    return {
        "files": files,
        "unreadable": unreadable,
        "events": events,
        "kinds": [
            {"kind": k, "count": n, "fields": sorted(fields.get(k, ()))} for k, n in kinds.most_common()
        ],
    }


def survey_text(survey: dict[str, Any]) -> str:
    if not survey["kinds"]:
        return f"{survey['files']} trace file(s); no NDJSON events recognised (see the excerpts above)."
    lines = [f"{survey['files']} trace file(s), {survey['events']} events:"]
    lines += [
        f"- `{k['kind']}` x{k['count']}, fields: {', '.join(k['fields']) or '(none)'}"
        for k in survey["kinds"]
    ]
    return "\n".join(lines)


def survey(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    return {"scratch": with_scratch(state, trace_survey=survey_traces(ctx.task))}


def first_request(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    system, learn = load_prompt(NAME, "system"), load_prompt(NAME, "learn")
    task_text, template = task_prompt_for(ctx, include_source=False, include_traces=True)
    remember(ctx, system, learn, template)
    found = (state.get("scratch") or {}).get("trace_survey") or survey_traces(ctx.task)
    user = learn.fill(task=task_text, survey=survey_text(found))
    messages = [{"role": "system", "content": system.text}, {"role": "user", "content": user}]
    return {"pending": messages}


@register_agent(
    NAME,
    supports={TaskKind.TLA},
    needs=("traces",),
    description="Infer the TLA+ model from execution traces only (no source code); bounded repair with trace "
    "validation in the loop.",
    prompts=(f"{NAME}/system", f"{NAME}/learn", "common/task_tla"),
    loop_checks=(TRACE_VALIDATION,),
    replays_outputs=True,
)
def build(ctx: AgentContext, checkpointer: Any = None):
    return build_repair_graph(first_request, pre_stages=[("survey_traces", survey)], checkpointer=checkpointer
    )
