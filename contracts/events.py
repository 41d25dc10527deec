"""The typed event stream of one attempt: every model call (request and reply, or the error), tool call, graph
step, score stage and error, in the order they happened, persisted in the store's ``events`` table.

Events are collected by an ``EventLog`` made current with ``collecting`` (a context variable, so concurrent
attempts on one event loop, and the worker threads they start, each fill their own log). The LLM client emits
``LLMCallEvent`` for every call it makes, whoever made it (generator rounds, pre-stages, tool-calling steps,
helper and judge calls while scoring), so no agent keeps its own books.

>>> log = EventLog()
>>> with collecting(log, stage="attempt"):
...     llm.complete(messages)          # -> log.events == [LLMCallEvent(...)]
>>> EventAdapter.validate_json(stored_json)  # one stored row back as its typed event

This module imports nothing from other sysmo packages (it is part of the contracts layer).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

EVENTS_SCHEMA_VERSION = 1


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class EventBase(BaseModel):
    v: int = EVENTS_SCHEMA_VERSION  # schema version of the event
    seq: int = 0  # position in the attempt's stream (set by the log)
    at: str = Field(default_factory=_now)
    stage: str = "attempt"  # "attempt" (the agent's graph) or "score" (the scoring cascade)


class LLMCallEvent(EventBase):
    """One model call: the full request, the full reply (or the error), what it cost and what it spent."""

    type: Literal["llm_call"] = "llm_call"
    role: str  # generator | helper | judge
    purpose: str | None = None  # the agent's step: generate, repair, translate, analyst, step, ...
    round: int | None = None
    agent: str | None = None
    attempt_id: str | None = None  # the attempt the caller said it served (CallContext)
    model: str
    provider: str
    is_control: bool = False
    request_hash: str
    sample_index: int = 0
    messages: list[dict[str, Any]]
    params: dict[str, Any] = Field(default_factory=dict)  # as requested: temperature, max_tokens, seed, tools, ...
    # what the provider received of them (``llm.sent.SentParams`` as JSON: sent, sent_as, dropped with litellm's
    # reason); None: not known (an offline provider, a call recorded before it was kept)
    sent_params: dict[str, Any] | None = None
    response: dict[str, Any] | None = None  # the LLMResponse, as JSON
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0  # what the reply cost when it was made
    spend_usd: float = 0.0  # new money (0 for a cache hit or an offline provider)
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None
    error_type: str | None = None

    @property
    def text(self) -> str:
        return str((self.response or {}).get("text") or "")


class ToolCallEvent(EventBase):
    """One run of a checking tool on an artifact."""

    type: Literal["tool_call"] = "tool_call"
    tool: str
    tool_version: str = ""
    input_hash: str = ""  # sha256 of the artifact checked (its place in the stream says which round)
    outcome: str = ""
    diagnostics: list[dict[str, Any]] = Field(default_factory=list)
    duration_s: float = 0.0
    isolation: str | None = None


class GraphStepEvent(EventBase):
    """One step of the agent's LangGraph graph: the node that ran and the state keys it changed."""

    type: Literal["graph_step"] = "graph_step"
    step: int
    node: str
    keys: list[str] = Field(default_factory=list)


class ScoreStageEvent(EventBase):
    """One stage of the scoring cascade."""

    type: Literal["score_stage"] = "score_stage"
    stage: str = "score"
    name: str
    outcome: str
    score: float | None = None
    duration_s: float = 0.0
    detail: str | None = None


class ErrorEvent(EventBase):
    """Something that stopped the attempt (or a stage of it)."""

    type: Literal["error"] = "error"
    where: str
    error_type: str
    message: str


Event = Annotated[LLMCallEvent | ToolCallEvent | GraphStepEvent | ScoreStageEvent | ErrorEvent,
                  Field(discriminator="type")]
EventAdapter: TypeAdapter[Event] = TypeAdapter(Event)


class EventLog:
    """The events of one attempt, in order (thread-safe: tool checks and scoring run in worker threads)."""

    def __init__(self, events: list[Any] | None = None) -> None:
        self.events: list[Any] = list(events or [])
        self._lock = threading.Lock()

    def add(self, event: Any) -> None:
        with self._lock:
            event.seq = len(self.events)
            self.events.append(event)

    def llm_calls(self, stage: str | None = None) -> list[LLMCallEvent]:
        return [e for e in self.events if isinstance(e, LLMCallEvent) and (stage is None or e.stage == stage)]


_CURRENT: contextvars.ContextVar[tuple[EventLog, str] | None] = contextvars.ContextVar("sysmo_events",
                                                                                      default=None)


@contextlib.contextmanager
def collecting(log: EventLog, stage: str = "attempt") -> Iterator[EventLog]:
    """Make ``log`` the current event log (for ``stage``) in this context and the tasks/threads it starts."""
    token = _CURRENT.set((log, stage))
    try:
        yield log
    finally:
        _CURRENT.reset(token)


def emit(event: Any) -> None:
    """Append ``event`` to the current log, if one is being collected (otherwise nothing happens)."""
    current = _CURRENT.get()
    if current is None:
        return
    log, stage = current
    if "stage" not in event.model_fields_set and not isinstance(event, ScoreStageEvent):
        event.stage = stage
    log.add(event)


def collecting_now() -> bool:
    return _CURRENT.get() is not None
