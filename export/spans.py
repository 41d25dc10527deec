"""One stored attempt as a tree of spans with OpenInference attributes (``attempt_trace``), at the times the
attempt recorded; ``export.otel`` sends the tree to an OpenTelemetry collector. No OpenTelemetry import here.

The tree: the attempt (an ``AGENT`` span: experiment, task, agent, model, arm, sample, seed, outcome, scores) holds
one ``CHAIN`` span per graph step, each holding the model calls (``LLM``) and tool checks (``TOOL``) made while that
step ran; then a ``score`` span with the scoring's model calls and one ``EVALUATOR`` span per cascade stage.

Times: a graph step runs from the end of the step before it (the attempt's start for the first) to its event; a
model call ends at its event and lasted its latency; a tool check ends at its event and lasted its duration. The
cascade records each stage's duration but not its start, so the stages are laid end to end, ending when the
scorecard was made.

>>> root = attempt_trace(store.attempt(attempt_id), store.scorecard(attempt_id), "exp1")
>>> [child.name for child in root.children]       # ['step 0 first_request', 'step 1 check', ..., 'score']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Union

from sysmo.contracts.attempt import Attempt
from sysmo.contracts.events import ErrorEvent, GraphStepEvent, LLMCallEvent, ScoreStageEvent, ToolCallEvent
from sysmo.contracts.scorecard import ScoreCard

AttributeValue = Union[str, bool, int, float, list[str], list[float]]

# OpenInference span kinds and attribute names (openinference-semantic-conventions: SpanAttributes)
SPAN_KIND = "openinference.span.kind"
INPUT_VALUE, INPUT_MIME = "input.value", "input.mime_type"
OUTPUT_VALUE, OUTPUT_MIME = "output.value", "output.mime_type"
METADATA = "metadata"
LLM_MODEL, LLM_PROVIDER = "llm.model_name", "llm.provider"
LLM_INPUT_MESSAGES, LLM_OUTPUT_MESSAGES = "llm.input_messages", "llm.output_messages"
LLM_PARAMETERS = "llm.invocation_parameters"
TOKENS_PROMPT, TOKENS_COMPLETION, TOKENS_TOTAL = ("llm.token_count.prompt", "llm.token_count.completion",
                                                  "llm.token_count.total")
COST_TOTAL = "llm.cost.total"
TOOL_NAME = "tool.name"
JSON_MIME = "application/json"
DIAGNOSTICS_SHOWN = 20  # a tool check's output.value lists at most this many diagnostics


@dataclass
class PlannedSpan:
    """A span to send: its name, OpenInference kind, times (ns since the epoch), attributes and children;
    ``error``: the span's status is an error with this description."""

    name: str
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    children: list[PlannedSpan] = field(default_factory=list)
    error: str | None = None
    events: list[tuple[str, int, dict[str, AttributeValue]]] = field(default_factory=list)  # (name, ns, attrs)

    def walk(self) -> list[PlannedSpan]:
        """This span and every span below it, parents first."""
        return [self, *(span for child in self.children for span in child.walk())]


def _ns(at: str) -> int:
    return int(datetime.fromisoformat(at).timestamp() * 1_000_000_000)


def _seconds_ns(seconds: float) -> int:
    return int(max(0.0, seconds) * 1_000_000_000)


def _attributes(values: dict[str, Any]) -> dict[str, AttributeValue]:
    """``values`` without the Nones (OpenTelemetry takes no null attribute)."""
    return {key: value for key, value in values.items() if value is not None}


def _text(content: Any) -> str:
    """A message's content as text: a string as it is, anything else (a list of parts) as JSON."""
    return content if isinstance(content, str) else json.dumps(content, default=str)


def message_attributes(prefix: str, messages: list[dict[str, Any]]) -> dict[str, AttributeValue]:
    """OpenInference's flattened messages: ``<prefix>.<i>.message.role`` / ``.content`` / ``.tool_calls.<j>...``."""
    out: dict[str, AttributeValue] = {}
    for i, message in enumerate(messages):
        head = f"{prefix}.{i}.message"
        out[f"{head}.role"] = str(message.get("role") or "")
        if message.get("content") is not None:
            out[f"{head}.content"] = _text(message["content"])
        if message.get("tool_call_id"):
            out[f"{head}.tool_call_id"] = str(message["tool_call_id"])
        for j, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or call
            arguments = function.get("arguments")
            out[f"{head}.tool_calls.{j}.tool_call.id"] = str(call.get("id") or "")
            out[f"{head}.tool_calls.{j}.tool_call.function.name"] = str(function.get("name") or "")
            out[f"{head}.tool_calls.{j}.tool_call.function.arguments"] = (
                arguments if isinstance(arguments, str) else json.dumps(arguments or {}))
    return out


def llm_span(event: LLMCallEvent) -> PlannedSpan:
    """One model call: the messages sent, the reply, tokens, cost and the parameters sent with it."""
    end = _ns(event.at)
    response = event.response or {}
    reply: dict[str, Any] = {"role": "assistant", "content": response.get("text") or ""}
    if response.get("tool_calls"):
        reply["tool_calls"] = [{"id": c.get("id"), "function": {"name": c.get("name"),
                                                               "arguments": c.get("arguments_json")}}
                               for c in response["tool_calls"]]
    attributes = _attributes({
        SPAN_KIND: "LLM", LLM_MODEL: response.get("served_model") or event.model, LLM_PROVIDER: event.provider,
        LLM_PARAMETERS: json.dumps(event.params, sort_keys=True, default=str),
        INPUT_VALUE: json.dumps(event.messages, default=str), INPUT_MIME: JSON_MIME,
        OUTPUT_VALUE: response.get("text") if event.response is not None else None,
        TOKENS_PROMPT: event.prompt_tokens, TOKENS_COMPLETION: event.completion_tokens,
        TOKENS_TOTAL: event.prompt_tokens + event.completion_tokens, COST_TOTAL: event.cost_usd,
        "sysmo.llm.model": event.model, "sysmo.llm.role": event.role, "sysmo.llm.purpose": event.purpose,
        "sysmo.llm.round": event.round, "sysmo.llm.cached": event.cached, "sysmo.llm.spend_usd": event.spend_usd,
        "sysmo.llm.latency_s": event.latency_s, "sysmo.llm.request_hash": event.request_hash,
        "sysmo.llm.error_type": event.error_type,
        **message_attributes(LLM_INPUT_MESSAGES, event.messages),
        **(message_attributes(LLM_OUTPUT_MESSAGES, [reply]) if event.response is not None else {}),
    })
    return PlannedSpan(name=f"llm {event.purpose or event.role}", kind="LLM",
                       start_ns=end - _seconds_ns(event.latency_s), end_ns=end, attributes=attributes,
                       error=event.error)


def tool_span(event: ToolCallEvent) -> PlannedSpan:
    """One tool check: the tool, its version, its verdict and how many diagnostics it gave."""
    end = _ns(event.at)
    shown = [_diagnostic_line(d) for d in event.diagnostics[:DIAGNOSTICS_SHOWN]]
    if len(event.diagnostics) > DIAGNOSTICS_SHOWN:
        shown.append(f"... and {len(event.diagnostics) - DIAGNOSTICS_SHOWN} more")
    attributes = _attributes({
        SPAN_KIND: "TOOL", TOOL_NAME: event.tool, "sysmo.tool.version": event.tool_version,
        "sysmo.tool.verdict": event.outcome, "sysmo.tool.diagnostics": len(event.diagnostics),
        "sysmo.tool.duration_s": event.duration_s, "sysmo.tool.input_sha256": event.input_hash or None,
        "sysmo.tool.isolation": event.isolation, OUTPUT_VALUE: "\n".join(shown) or event.outcome,
    })
    return PlannedSpan(name=f"check {event.tool}", kind="TOOL", start_ns=end - _seconds_ns(event.duration_s),
                       end_ns=end, attributes=attributes,
                       error=f"{event.tool} could not run" if event.outcome == "error" else None)


def _diagnostic_line(diagnostic: dict[str, Any]) -> str:
    place = ":".join(str(diagnostic[k]) for k in ("line", "column") if diagnostic.get(k) is not None)
    return f"{place + ': ' if place else ''}{diagnostic.get('severity', 'error')}: {diagnostic.get('message', '')}"


def _error_event(event: ErrorEvent) -> tuple[str, int, dict[str, AttributeValue]]:
    return ("exception", _ns(event.at), {"exception.type": event.error_type, "exception.message": event.message,
                                         "sysmo.error.where": event.where})


def _steps(attempt_events: list[Any], start_ns: int) -> tuple[list[PlannedSpan], list[PlannedSpan], list[Any]]:
    """The graph steps (each with the calls and checks made while it ran), the calls and checks after the last
    step, and the error events after it."""
    steps: list[PlannedSpan] = []
    pending: list[PlannedSpan] = []
    errors: list[Any] = []
    previous_end = start_ns
    for event in attempt_events:
        if isinstance(event, LLMCallEvent):
            pending.append(llm_span(event))
        elif isinstance(event, ToolCallEvent):
            pending.append(tool_span(event))
        elif isinstance(event, ErrorEvent):
            errors.append(event)
        elif isinstance(event, GraphStepEvent):
            end = _ns(event.at)
            start = min([previous_end, *(child.start_ns for child in pending)])
            step = PlannedSpan(name=f"step {event.step} {event.node}", kind="CHAIN", start_ns=start, end_ns=end,
                               attributes={SPAN_KIND: "CHAIN", "sysmo.graph.step": event.step,
                                           "sysmo.graph.node": event.node, "sysmo.graph.keys": list(event.keys)},
                               children=pending,
                               events=[_error_event(e) for e in errors])
            steps.append(step)
            pending, errors, previous_end = [], [], end
    return steps, pending, errors


def _score_span(score_events: list[Any], card: ScoreCard | None, not_before_ns: int) -> PlannedSpan | None:
    """The scoring: its model calls (judge, helper) and one span per cascade stage."""
    calls = [llm_span(e) for e in score_events if isinstance(e, LLMCallEvent)]
    stages = [e for e in score_events if isinstance(e, ScoreStageEvent)]
    if not calls and not stages:
        return None
    end = max([_ns(e.at) for e in stages] + [c.end_ns for c in calls])
    spans: list[PlannedSpan] = []
    cursor = end
    for event in reversed(stages):  # laid end to end, the last ending when the card was made
        start = max(not_before_ns, cursor - _seconds_ns(event.duration_s))
        spans.append(PlannedSpan(
            name=f"score {event.name}", kind="EVALUATOR", start_ns=start, end_ns=max(start, cursor),
            attributes=_attributes({SPAN_KIND: "EVALUATOR", "sysmo.score.stage": event.name,
                                    "sysmo.score.outcome": event.outcome, "sysmo.score.value": event.score,
                                    "sysmo.score.duration_s": event.duration_s, "sysmo.score.skipped_because":
                                    event.detail, OUTPUT_VALUE: None if event.score is None else str(event.score)}),
            error=f"stage {event.name}: {event.outcome}" if event.outcome == "error" else None))
        cursor = start
    spans.reverse()
    children = sorted(calls + spans, key=lambda s: s.start_ns)
    return PlannedSpan(name="score", kind="CHAIN", start_ns=min(s.start_ns for s in children), end_ns=end,
                       attributes=_attributes({SPAN_KIND: "CHAIN", "sysmo.score.cascade":
                                               card.cascade if card else None,
                                               "sysmo.score.mode": card.mode if card else None}),
                       children=children)


def score_attributes(card: ScoreCard | None) -> dict[str, AttributeValue]:
    """``sysmo.score.<stage>`` per scored stage (a stage with no value, skipped for want of a judge, has none)."""
    if card is None:
        return {}
    return {f"sysmo.score.{stage.stage}": stage.value for stage in card.stages if stage.scored}


def attempt_trace(attempt: Attempt, card: ScoreCard | None, experiment_id: str) -> PlannedSpan:
    """The attempt's span tree (``attempt.events`` read from the store with it)."""
    start = _ns(attempt.started_at)
    attempt_events = [e for e in attempt.events if e.stage != "score"]
    score_events = [e for e in attempt.events if e.stage == "score"]
    steps, loose, errors = _steps(attempt_events, start)
    attempt_end = start + _seconds_ns(attempt.duration_s)
    children = steps + loose
    score = _score_span(score_events, card, max([attempt_end, *(c.end_ns for c in children)]))
    if score is not None:
        children.append(score)
    arm = attempt.arm_values()
    first_prompt = attempt.rounds[0].messages if attempt.rounds else []
    final = attempt.final_artifact
    metadata = {"experiment": experiment_id, "attempt": attempt.id, "task": attempt.task_id, "agent": attempt.agent,
                "model": attempt.model, "arm": attempt.arm_label, "sample": attempt.sample_index,
                "seed": attempt.seed, "outcome": attempt.status.value,
                "scores": {k.removeprefix("sysmo.score."): v for k, v in score_attributes(card).items()}}
    attributes = _attributes({
        SPAN_KIND: "AGENT", "sysmo.experiment.id": experiment_id, "sysmo.attempt.id": attempt.id,
        "sysmo.task.id": attempt.task_id, "sysmo.agent": attempt.agent, "sysmo.model": attempt.model,
        "sysmo.arm": attempt.arm_label, **{f"sysmo.arm.{name}": value for name, value in arm.items()},
        "sysmo.sample": attempt.sample_index, "sysmo.seed": attempt.seed, "sysmo.outcome": attempt.status.value,
        "sysmo.kind": attempt.kind, "sysmo.rounds": len(attempt.rounds), "sysmo.error": attempt.error,
        "sysmo.failure_reason": attempt.failure_reason(), "sysmo.parent_attempt.id": attempt.parent_attempt_id,
        "sysmo.tokens.prompt": attempt.prompt_tokens, "sysmo.tokens.completion": attempt.completion_tokens,
        "sysmo.cost_usd": attempt.cost_usd, **score_attributes(card),
        INPUT_VALUE: json.dumps(first_prompt, default=str) if first_prompt else None,
        INPUT_MIME: JSON_MIME if first_prompt else None,
        OUTPUT_VALUE: "\n\n".join(final.files.values()) if final is not None else None,
        METADATA: json.dumps(metadata, default=str),
    })
    end = max([attempt_end, *(c.end_ns for c in children)])
    return PlannedSpan(name=f"attempt {attempt.task_id}", kind="AGENT", start_ns=start, end_ns=end,
                       attributes=attributes, children=children,
                       error=attempt.error if attempt.status.value == "error" else None,
                       events=[_error_event(e) for e in errors])
