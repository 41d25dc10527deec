"""``Round`` and ``Attempt``: everything one sample did.

With its event stream (``Attempt.events``: every model call's full request and reply, tool calls, graph
steps, stored in the store's ``events`` table) it is enough to replay it without calling the LLM again
(``sysmo replay``)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from sysmo.contracts.events import Event, LLMCallEvent

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.check import CheckResult


def utcnow() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class AttemptStatus(StrEnum):
    PASSED = "passed"  # the final artifact passed the agent's tool check
    FAILED = "failed"  # the repair budget ran out with the tool still rejecting the artifact
    ERROR = "error"  # the attempt could not run to its end (LLM failed for good, tool crashed, budget cap)
    NOT_COVERED = "not_covered"  # a replayed source has no output for the task: neither passed nor failed
    RUNNING = "running"


class LLMCallSummary(BaseModel):
    """What one model call cost (``cost_usd``: when the reply was made; ``spend_usd``: new money, 0 for a cache
    hit); the full request and reply are the attempt's ``LLMCallEvent`` in the store's events table."""

    role: str = "generator"
    model: str = ""
    provider: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    spend_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False
    request_hash: str = ""
    is_control: bool = False
    purpose: str = ""  # e.g. "generate", "translate", "architect", "review"
    error: str | None = None  # the call failed for good (after retries): what happened
    error_type: str | None = None  # its class: RateLimitError, ConnectionError, ReplyTooLarge, ...
    # what the provider received of the call's parameters (``LLMCallEvent.sent_params``); None: not known
    sent_params: dict[str, Any] | None = None


class Round(BaseModel):
    """One generate-or-repair step: the prompt, the reply, the artifact pulled from it, and the tool's verdict."""

    index: int  # 0 = first generation, 1.. = repair rounds
    kind: str = "generate"  # generate | repair | tool-step
    messages: list[dict[str, Any]] = Field(default_factory=list)  # the request (role/content dicts)
    response: str = ""
    llm_calls: list[LLMCallSummary] = Field(default_factory=list)
    artifact: Artifact | None = None
    extraction_error: str | None = None
    extraction_notes: list[str] = Field(default_factory=list)
    check: CheckResult | None = None
    error: str | None = None
    started_at: str = Field(default_factory=utcnow)
    duration_s: float = 0.0
    tool_time_s: float = 0.0
    llm_time_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.check is not None and self.check.ok


class Attempt(BaseModel):
    """One sample of one agent on one task with one model."""

    id: str
    task_id: str
    agent: str
    model: str
    sample_index: int = 0
    max_rounds: int = 3
    feedback: str = "diagnostics"  # --feedback level (sysmo.graphs.repair.Feedback); "none": one shot, no repair
    strategy: str | None = None  # --strategy (sysmo.agents.strategies.Strategy); None: sysmo's own task prompt
    temperature: float | None = None  # the generator's temperature the attempt asked for (None: the model's own)
    # the arm's settings as the experiment gave them (sysmo.contracts.arms.ARM_FACTORS); {} before arms existed
    arm: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None  # the (task, sample)'s seed sent with the model calls (None: none was sent)
    time_limit_s: float | None = None  # the attempt's wall-clock limit (None: none)
    status: AttemptStatus = AttemptStatus.RUNNING
    rounds: list[Round] = Field(default_factory=list)
    final_artifact: Artifact | None = None
    error: str | None = None
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    tool_versions: dict[str, str] = Field(default_factory=dict)
    is_control: bool = False  # True when the model is `reference` or `mockllm/...`
    kind: str = "live"  # live | control | replay (sysmo.llm.roles.model_kind): how runs are labelled
    started_at: str = Field(default_factory=utcnow)
    duration_s: float = 0.0
    checkpoint_db: str | None = None
    # a fork (``sysmo fork``): the attempt it was forked from, the checkpoint id it resumed and that step's number
    # in the parent's graph history; its first ``inherited_rounds`` rounds are the parent's, as they were
    parent_attempt_id: str | None = None
    forked_at: str | None = None
    forked_at_step: int | None = None
    inherited_rounds: int = 0
    fork_changes: dict[str, str] = Field(default_factory=dict)  # what the fork changed: model, feedback, prompt_file
    extras: dict[str, Any] = Field(default_factory=dict)  # agent-specific artifacts (intermediate model, role outputs)
    # model calls of the attempt that no round holds (a tool-calling agent's steps after its last check)
    calls_outside_rounds: list[LLMCallSummary] = Field(default_factory=list)
    # the typed event stream (stored in the events table, not in the attempt's JSON)
    events: list[Event] = Field(default_factory=list, exclude=True, repr=False)

    def arm_values(self) -> dict[str, Any]:
        """The arm's settings: as configured, or for an attempt from before arms, as the attempt recorded them."""
        from sysmo.contracts.arms import ARM_FACTORS

        return {name: self.arm[name] if name in self.arm else getattr(self, name, factor.default)
                for name, factor in ARM_FACTORS.items()}

    @property
    def arm_label(self) -> str:
        from sysmo.contracts.arms import Arm

        return Arm.of(self.arm_values()).label

    def all_llm_calls(self) -> list[LLMCallSummary]:
        return [c for r in self.rounds for c in r.llm_calls] + list(self.calls_outside_rounds)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.all_llm_calls())

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.all_llm_calls())

    @property
    def cost_usd(self) -> float:
        """What the attempt's replies cost when they were made (cached replies included)."""
        return sum(c.cost_usd for c in self.all_llm_calls())

    @property
    def spend_usd(self) -> float:
        """New money this attempt spent (cached replies and offline providers cost nothing): what budgets count.
        A fork's rounds taken from its parent were paid for by the parent."""
        inherited = self.rounds[:self.inherited_rounds]
        return sum(c.spend_usd for c in self.all_llm_calls()) - sum(c.spend_usd for r in inherited for c in r.llm_calls)

    def failure_reason(self) -> str | None:
        """Why the attempt did not pass, in one line: its error, else its last round's (no model in the reply,
        the round's error, or the tool's first error as ``file:line:col: error: message``); None if it passed."""
        if self.status == AttemptStatus.PASSED:
            return None
        if self.error:
            return self.error
        if not self.rounds:
            return None
        last = self.rounds[-1]
        if last.extraction_error:
            return f"no model in the reply: {last.extraction_error}"
        if last.error:
            return last.error
        if last.check is not None and not last.check.ok:
            first = last.check.errors or last.check.diagnostics
            return first[0].render().splitlines()[0] if first else f"{last.check.tool}: {last.check.outcome.value}"
        return None

    def settle_calls(self) -> None:
        """Add the attempt's answered model calls that no round holds (by its events) to ``calls_outside_rounds``."""
        held: dict[str, int] = {}
        for call in self.all_llm_calls():
            if call.request_hash:  # a failed call's summary has none: it holds no answered call
                held[call.request_hash] = held.get(call.request_hash, 0) + 1
        for event in self.events:
            if not isinstance(event, LLMCallEvent) or event.stage != "attempt" or event.response is None:
                continue
            if held.get(event.request_hash):
                held[event.request_hash] -= 1
                continue
            self.calls_outside_rounds.append(summary_of(event))

    @property
    def repair_rounds(self) -> int:
        return max(0, len([r for r in self.rounds if r.kind in ("generate", "repair")]) - 1)


def summary_of(event: LLMCallEvent) -> LLMCallSummary:
    return LLMCallSummary(role=event.role, model=event.model, provider=event.provider,
                          prompt_tokens=event.prompt_tokens, completion_tokens=event.completion_tokens,
                          cost_usd=event.cost_usd, spend_usd=event.spend_usd, latency_s=event.latency_s,
                          cached=event.cached, request_hash=event.request_hash, is_control=event.is_control,
                          purpose=event.purpose or "")
