"""The shared nodes: generate (model call + extraction), check (tool + the round's record), repair.

Each takes the state and returns the keys it changes. A round is two graph steps, so the checkpoint history
has a fork point before every model call (its request in ``pending``) and before every tool check.
"""

from __future__ import annotations

import time
from typing import Any

from sysmo.contracts.artifact import Artifact
from sysmo.errors import NotCoveredError, ReplayEndedError, SysmoError
from sysmo.contracts.attempt import LLMCallSummary, Round
from sysmo.graphs.context import AgentContext
from sysmo.llm.response import CallContext
from sysmo.graphs.extract import extract_artifact
from sysmo.graphs.inline import runs_inline
from sysmo.graphs.repair import CUT_AT_TOKEN_LIMIT, repair_request
from sysmo.graphs.state import AgentState
from sysmo.contracts.check import CheckResult, Outcome

LANGUAGE_NAMES = {"tla": "TLA+", "sysml": "SysML v2", "plantuml": "PlantUML"}


def with_failed_call(state: Any, exc: BaseException) -> list[dict[str, Any]]:
    """The state's llm_calls plus the call that raised ``exc`` (when ``call_model`` recorded it)."""
    calls = list(state.get("llm_calls") or [])
    failed = getattr(exc, "failed_call", None)
    return calls + [failed.model_dump()] if failed is not None else calls


async def call_model(ctx: AgentContext, messages: list[dict[str, Any]], *, purpose: str, role: str = "generator",
                     round_index: int | None = None, **kwargs: Any) -> tuple[str, LLMCallSummary, Any]:
    """One model call through the context's client, awaited on the event loop (``acomplete``); returns
    (text, cost summary, raw response)."""
    params: dict[str, Any] = {"role": role, "sample_index": ctx.sample_index,
                              "context": CallContext(task=ctx.task, round=round_index, agent=ctx.agent,
                                                     attempt_id=ctx.attempt_id, purpose=purpose,
                                                     call_index=ctx.next_call_index(round_index, role))}
    if ctx.temperature is not None and role == "generator":
        params["temperature"] = ctx.temperature
    if ctx.max_tokens is not None and role == "generator":
        params["max_tokens"] = ctx.max_tokens
    if ctx.seed is not None:  # litellm passes it on where the provider takes one and drops it elsewhere
        params["extra"] = {"seed": ctx.seed}
    extra = kwargs.pop("extra", None)
    params.update(kwargs)
    if extra:
        params["extra"] = {**params.get("extra", {}), **extra}
    started = time.monotonic()
    try:
        response = await ctx.llm.acomplete(messages, **params)
    except SysmoError as exc:
        # the failed call still gets its llm_calls row: what failed, its class, how long it took
        exc.failed_call = LLMCallSummary(  # type: ignore[attr-defined]
            role=role, model=str(getattr(exc, "model", "") or ""), purpose=purpose,
            latency_s=time.monotonic() - started, error=str(exc)[:2000],
            prompt_tokens=int(getattr(exc, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(exc, "completion_tokens", 0) or 0),
            cost_usd=float(getattr(exc, "cost_usd", 0.0) or 0.0), spend_usd=float(getattr(exc, "cost_usd", 0.0) or 0.0),
            error_type=str(getattr(exc, "error_class", None) or type(exc).__name__))
        raise
    elapsed = time.monotonic() - started
    usage = getattr(response, "usage", None)
    summary = LLMCallSummary(
        role=role,
        model=str(getattr(response, "model", "") or ""),
        provider=str(getattr(response, "provider", "") or ""),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0) if usage is not None else 0,
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0,
        cost_usd=float(getattr(response, "cost_usd", 0.0) or 0.0),
        spend_usd=float(getattr(response, "spend_usd", 0.0) or 0.0),
        latency_s=float(getattr(response, "latency_s", elapsed) or elapsed),
        cached=bool(getattr(response, "cached", False)),
        request_hash=str(getattr(response, "request_hash", "") or ""),
        is_control=bool(getattr(response, "is_control", False)),
        purpose=purpose,
        sent_params=sent.model_dump() if (sent := getattr(response, "sent_params", None)) is not None else None,
    )
    return str(getattr(response, "text", "") or ""), summary, response


async def generate(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Ask the model for the round's reply and pull the artifact out of it."""
    started = time.monotonic()
    try:
        text, summary, response = await call_model(ctx, state["pending"], round_index=state.get("round_index", 0),
                                                   purpose="generate" if state.get("round_index", 0) == 0 else "repair")
    except ReplayEndedError as exc:
        return replay_ended(state, exc)
    except SysmoError as exc:
        return {"response": "", "error": f"model call failed: {exc}", "status": "error", "round_started": started,
                "artifact": None, "extraction_error": None, "extraction_notes": [],
                "llm_calls": with_failed_call(state, exc)}
    calls = list(state.get("llm_calls") or []) + [summary.model_dump()]
    result = extract_artifact(text, ctx.task.language, ctx.task.inputs.module_name)
    notes = list(result.notes)
    if getattr(response, "finish_reason", None) == "length":
        notes.append(CUT_AT_TOKEN_LIMIT)
    return {"response": text, "llm_calls": calls, "error": None,
            "llm_time_s": (state.get("llm_time_s") or 0.0) + summary.latency_s,
            "artifact": result.artifact.model_dump(mode="json") if result.artifact else None,
            "extraction_error": result.error, "extraction_notes": notes}


def replay_ended(state: AgentState, exc: ReplayEndedError) -> dict[str, Any]:
    """A replayed source has no reply for this round. Before any round: the task is not covered. Later: the
    attempt ends as the source's did, judged by our last check (failed: it had not passed); no round is added."""
    index = state.get("round_index", 0)
    scratch = {**(state.get("scratch") or {}), "replay_ended_at_round": index}
    if index == 0 or isinstance(exc, NotCoveredError):
        return {"status": "not_covered", "error": str(exc), "scratch": scratch, "artifact": None}
    return {"status": "failed", "error": None, "scratch": scratch, "artifact": None}


def check(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Run the tool on the round's artifact (if there is one), then close the round."""
    if (state.get("scratch") or {}).get("replay_ended_at_round") == state.get("round_index", 0):
        return {}  # the replayed source ended before this round: there is no round to record
    update: dict[str, Any] = {"check": None}
    artifact = result = None
    if state.get("artifact") and state.get("status") != "error":
        artifact = Artifact.model_validate(state["artifact"])
        started = time.monotonic()
        try:
            result = ctx.checker(artifact, ctx.task)
        except SysmoError as exc:
            result = CheckResult(tool="checker", outcome=Outcome.ERROR, raw_output=str(exc))
        update = {"check": result.model_dump(mode="json"),
                  "tool_time_s": (state.get("tool_time_s") or 0.0) + (time.monotonic() - started)}
    closed = record({**state, **update}, ctx, artifact=artifact, check_result=result)  # type: ignore[typeddict-item]
    return {**update, **closed}


def record(state: AgentState, ctx: AgentContext, *, artifact: Artifact | None = None,
           check_result: CheckResult | None = None) -> dict[str, Any]:
    """Close the round (part of ``check``): append its ``Round`` record; decide passed / keep going.
    ``artifact`` / ``check_result``: the state's ``artifact`` / ``check`` as models, when the caller has them
    (they are not read back from the state again)."""
    index = state.get("round_index", 0)
    if check_result is None and state.get("check"):
        check_result = CheckResult.model_validate(state["check"])
    if artifact is None and state.get("artifact"):
        artifact = Artifact.model_validate(state["artifact"])
    started = state.get("round_started") or time.monotonic()
    rnd = Round(
        index=index,
        kind="generate" if index == 0 else "repair",
        messages=list(state.get("pending") or []),
        response=state.get("response") or "",
        llm_calls=[LLMCallSummary.model_validate(c) for c in state.get("llm_calls") or []],
        artifact=artifact,
        extraction_error=state.get("extraction_error"),
        extraction_notes=list(state.get("extraction_notes") or []),
        check=check_result,
        error=state.get("error"),
        duration_s=time.monotonic() - started,
        tool_time_s=state.get("tool_time_s") or 0.0,
        llm_time_s=state.get("llm_time_s") or 0.0,
    )
    update: dict[str, Any] = {"rounds": [rnd.model_dump(mode="json")]}
    if state.get("status") == "error":
        return update
    if check_result is not None and check_result.ok:
        update["status"] = "passed"
    elif index >= state.get("max_rounds", ctx.max_rounds):
        update["status"] = "failed"
    elif check_result is not None and check_result.outcome == Outcome.ERROR and not check_result.diagnostics:
        # the tool itself broke: repairing the model cannot help, and its output is not about the model
        update["status"] = "error"
        update["error"] = f"{check_result.tool} could not run: {check_result.raw_output[-500:]}"
    return update


def check_and_request_repair(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """``check``, then, when the attempt goes on, the next round's request (``repair``) in the same step: the
    checkpoint after it holds the round's record and the request the next model call will send."""
    update = check(state, ctx)
    after = {**state, **update}
    if route_after_check(after) == "next":  # type: ignore[arg-type]
        update.update(repair(after, ctx))  # type: ignore[arg-type]
    return update


def route_after_check(state: AgentState) -> str:
    return "end" if state.get("status") in ("passed", "failed", "error", "not_covered") else "next"


@runs_inline
def repair(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Next round's request: the conversation so far, the reply, and the tool's diagnostics."""
    artifact = Artifact.model_validate(state["artifact"]) if state.get("artifact") else None
    check_result = CheckResult.model_validate(state["check"]) if state.get("check") else None
    feedback = repair_request(artifact, check_result, state.get("extraction_error"),
                              LANGUAGE_NAMES.get(ctx.task.language.value, ctx.task.language.value), ctx.feedback,
                              cut_at_token_limit=CUT_AT_TOKEN_LIMIT in (state.get("extraction_notes") or []))
    conversation = list(state.get("pending") or []) + [
        {"role": "assistant", "content": state.get("response") or ""},
        {"role": "user", "content": feedback},
    ]
    return {"pending": conversation, "round_index": state.get("round_index", 0) + 1,
            "response": "", "llm_calls": [], "artifact": None, "extraction_error": None, "extraction_notes": [],
            "check": None, "round_started": time.monotonic(), "tool_time_s": 0.0, "llm_time_s": 0.0}
