"""An attempt's span tree (``sysmo.export.spans.attempt_trace``) from its recorded events: which span holds which,
and the times each span takes from the record (no OpenTelemetry needed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.contracts.events import ErrorEvent, GraphStepEvent, LLMCallEvent, ScoreStageEvent, ToolCallEvent
from sysmo.contracts.scorecard import ScoreCard, StageResult
from sysmo.export.spans import attempt_trace

START = datetime(2026, 11, 29, 1, 0, 0, tzinfo=UTC)


def at(seconds: float) -> str:
    """An event's time, as events record it."""
    return (START + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")


def ns(seconds: float) -> int:
    return int((START + timedelta(seconds=seconds)).timestamp() * 1e9)


def call(seconds: float, latency: float, purpose: str, **fields: object) -> LLMCallEvent:
    return LLMCallEvent(at=at(seconds), role="generator", purpose=purpose, model="openai/m", provider="openai",
                        request_hash="h", messages=[{"role": "user", "content": f"please {purpose}"}],
                        params={"temperature": 0.2, "seed": 7}, latency_s=latency, prompt_tokens=10,
                        completion_tokens=5, cost_usd=0.25, **fields)


def attempt() -> Attempt:
    events = [
        GraphStepEvent(at=at(0.1), step=0, node="first_request", keys=["messages"]),
        call(2.0, 1.5, "generate", response={"text": "model v1", "model": "openai/m", "provider": "openai"}),
        GraphStepEvent(at=at(2.1), step=1, node="generate", keys=["rounds"]),
        ToolCallEvent(at=at(3.0), tool="plantuml", tool_version="1.2022.6", outcome="failed", duration_s=0.5,
                      diagnostics=[{"line": 4, "severity": "error", "message": "unclosed"}]),
        GraphStepEvent(at=at(3.2), step=2, node="check", keys=["rounds"]),
        call(4.0, 0.5, "repair", error="server said 500", error_type="InternalServerError"),
        ErrorEvent(at=at(4.0), where="llm", error_type="InternalServerError", message="server said 500"),
        GraphStepEvent(at=at(4.1), step=3, node="generate", keys=["status"]),
        ScoreStageEvent(at=at(6.0), name="syntax", outcome="ok", score=1.0, duration_s=0.5),
        ScoreStageEvent(at=at(6.0), name="clue", outcome="skipped", score=0.0, duration_s=1.0, detail="no judge"),
    ]
    events[-2].stage = events[-1].stage = "score"
    return Attempt(id="a1", task_id="t/1", agent="base_modeling", model="openai/m", sample_index=1, seed=7,
                   status=AttemptStatus.ERROR, error="the model failed for good", started_at=at(0), duration_s=4.2,
                   events=events)


CARD = ScoreCard(task_id="t/1", cascade="uml_class", stages=[
    StageResult(stage="syntax", value=1.0, passed=True),
    StageResult(stage="clue", value=0.0, outcome="skipped", skipped_because="no judge")])


def test_steps_hold_the_calls_and_checks_made_while_they_ran_then_the_score() -> None:
    root = attempt_trace(attempt(), CARD, "exp")
    assert root.kind == "AGENT" and root.error == "the model failed for good"
    assert [c.name for c in root.children] == ["step 0 first_request", "step 1 generate", "step 2 check",
                                               "step 3 generate", "score"]
    steps = root.children
    assert [c.name for c in steps[1].children] == ["llm generate"]
    assert [c.name for c in steps[2].children] == ["check plantuml"]
    assert [c.name for c in steps[3].children] == ["llm repair"]
    assert [e[0] for e in steps[3].events] == ["exception"]  # the error, on the step it happened in
    assert [c.name for c in steps[4].children] == ["score syntax", "score clue"]
    # the root: what the attempt was and how it scored (a stage with no value has no score attribute)
    attributes = root.attributes
    assert (attributes["sysmo.experiment.id"], attributes["sysmo.task.id"], attributes["sysmo.sample"],
            attributes["sysmo.seed"], attributes["sysmo.outcome"]) == ("exp", "t/1", 1, 7, "error")
    assert attributes["sysmo.score.syntax"] == 1.0 and "sysmo.score.clue" not in attributes


def test_each_span_takes_its_times_from_the_record() -> None:
    root = attempt_trace(attempt(), CARD, "exp")
    step0, step1, step2, step3, score = root.children
    assert (root.start_ns, step0.start_ns, step0.end_ns) == (ns(0), ns(0), ns(0.1))
    generate = step1.children[0]
    assert (generate.start_ns, generate.end_ns) == (ns(0.5), ns(2.0))  # ended at its event, lasted its latency
    assert (step1.start_ns, step1.end_ns) == (ns(0.1), ns(2.1))  # from the step before it to its own event
    check = step2.children[0]
    assert (check.start_ns, check.end_ns) == (ns(2.5), ns(3.0))
    syntax, clue = score.children  # laid end to end, the last ending when the card was made
    assert (syntax.start_ns, syntax.end_ns, clue.start_ns, clue.end_ns) == (ns(4.5), ns(5.0), ns(5.0), ns(6.0))
    assert root.end_ns == ns(6.0)


def test_a_model_call_carries_openinference_attributes() -> None:
    root = attempt_trace(attempt(), CARD, "exp")
    generate = root.children[1].children[0]
    attributes = generate.attributes
    assert attributes["openinference.span.kind"] == "LLM" and attributes["llm.model_name"] == "openai/m"
    assert json.loads(attributes["llm.invocation_parameters"]) == {"temperature": 0.2, "seed": 7}
    assert attributes["llm.input_messages.0.message.content"] == "please generate"
    assert attributes["llm.output_messages.0.message.content"] == "model v1"
    assert (attributes["llm.token_count.prompt"], attributes["llm.token_count.completion"],
            attributes["llm.token_count.total"], attributes["llm.cost.total"]) == (10, 5, 15, 0.25)
    failed = root.children[3].children[0]
    assert failed.error == "server said 500" and "llm.output_messages.0.message.role" not in failed.attributes
    check = root.children[2].children[0].attributes
    assert (check["tool.name"], check["sysmo.tool.version"], check["sysmo.tool.verdict"],
            check["sysmo.tool.diagnostics"]) == ("plantuml", "1.2022.6", "failed", 1)
    assert check["output.value"] == "4: error: unclosed"
