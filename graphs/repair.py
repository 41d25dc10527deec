"""Build the repair request from the tool's real diagnostics: the messages, the offending lines, TLC's trace.

The reference SysMoBench harness feeds back only "Runtime check failed"; we quote what the tool said,
the lines it names (with numbers), and for TLC the states of the counterexample.

``Feedback`` is the ablation of that choice (``--feedback``): ``none`` makes one shot (no repair round),
``bare`` says only that the check failed, ``diagnostics`` (default) is the report above, ``full`` adds what
the tool printed (TLC's messages and error trace as it wrote them, without its progress and coverage
reports) and any trace-validation diff the check recorded.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome
from sysmo.tools.tla.tlc_output import printed_output

CONTEXT_LINES = 2
MAX_DIAGNOSTICS = 15
MAX_TRACE_STATES = 12
FULL_OUTPUT_CHARS = 4000
TRACE_DIFF_KEYS = ("trace_validation", "trace_diff", "first_failure", "mismatch")


class Feedback(StrEnum):
    """How much of the check's verdict the repair request carries."""

    NONE = "none"
    BARE = "bare"
    DIAGNOSTICS = "diagnostics"
    FULL = "full"


def quote_lines(text: str, line: int, context: int = CONTEXT_LINES) -> str:
    """The named line (marked ``>>``) with a little context, numbered as the tool numbers them."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    lo, hi = max(1, line - context), min(len(lines), line + context)
    width = len(str(hi))
    return "\n".join(f"{'>>' if n == line else '  '} {n:>{width}} | {lines[n - 1]}" for n in range(lo, hi + 1))


def _file_for(diagnostic: Diagnostic, artifact: Artifact) -> str | None:
    if diagnostic.file:
        base = diagnostic.file.rsplit("/", 1)[-1]
        for name in artifact.files:
            if name == base or name == diagnostic.file:
                return name
    return artifact.main_file


def format_trace(trace: list[dict[str, Any]]) -> str:
    """A TLC counterexample as numbered states (``details['trace']``: [{'action':..., 'variables': {...}}])."""
    out = []
    shown = trace if len(trace) <= MAX_TRACE_STATES else trace[: MAX_TRACE_STATES // 2] + [None] + trace[-MAX_TRACE_STATES // 2:]
    for i, state in enumerate(shown):
        if state is None:
            out.append(f"... {len(trace) - MAX_TRACE_STATES} states omitted ...")
            continue
        number = state.get("number", i + 1)
        action = state.get("action") or state.get("label") or ""
        out.append(f"State {number}: {action}".rstrip())
        for var, value in (state.get("variables") or {}).items():
            out.append(f"  /\\ {var} = {value}")
    return "\n".join(out)


INCONCLUSIVE_ADVICE = (
    "The model check did not finish within its bound (time, states or memory), so the model is neither accepted "
    "nor rejected and this round does not pass. Bound the constants and make the state space finite: small "
    "finite sets for the constants in the .cfg, no unbounded counters, sequences or message sets (cap them, or "
    "add a state CONSTRAINT), and no quantifier or set over a huge or infinite domain (TLC enumerates it)."
)


def diagnostics_report(artifact: Artifact | None, check: CheckResult) -> str:
    """The tool's verdict as the model should see it: each diagnostic with the lines it names (an inconclusive
    check: what to change so that it can finish, ``INCONCLUSIVE_ADVICE``)."""
    parts = [f"The {check.tool} check ({check.tool_version}) reported: {check.outcome.value}."]
    if check.outcome == Outcome.INCONCLUSIVE:
        parts.append(INCONCLUSIVE_ADVICE)
    for d in check.diagnostics[:MAX_DIAGNOSTICS]:
        parts.append(d.render())
        if artifact is not None and d.line:
            name = _file_for(d, artifact)
            quoted = quote_lines(artifact.files.get(name or "", ""), d.line) if name else ""
            if quoted:
                parts.append(quoted)
    if len(check.diagnostics) > MAX_DIAGNOSTICS:
        parts.append(f"... and {len(check.diagnostics) - MAX_DIAGNOSTICS} more diagnostics.")
    trace = check.details.get("trace") or check.details.get("error_trace")
    if trace:
        parts.append("Counterexample found by TLC:")
        parts.append(format_trace(trace))
    if not check.diagnostics and not trace and check.raw_output:
        parts.append("Tool output (end):\n" + check.raw_output[-2000:])
    return "\n".join(parts)


def bare_report(check: CheckResult) -> str:
    """Only that the check failed, as SysMoBench's harness feeds back (no message, no line)."""
    stage = "Syntax" if check.tool.lower() in ("sany", "plantuml", "sysml", "opensysml") else "Runtime"
    return f"{stage} error: {stage} check failed."


def full_report(artifact: Artifact | None, check: CheckResult) -> str:
    """The diagnostics, plus the tool's own output (TLC's error trace as printed) and trace-validation diffs."""
    parts = [diagnostics_report(artifact, check)]
    for key in TRACE_DIFF_KEYS:
        if check.details.get(key):
            parts.append(f"Trace validation ({key}):\n{check.details[key]}")
    if check.raw_output:
        parts.append(f"Full {check.tool} output (end):\n" + printed_output(check.raw_output)[-FULL_OUTPUT_CHARS:])
    return "\n".join(parts)


def feedback_report(artifact: Artifact | None, check: CheckResult, feedback: Feedback | str = Feedback.DIAGNOSTICS) -> str:
    """The check's verdict at the level ``feedback`` (``none`` never reaches a repair round: same as ``bare``)."""
    level = Feedback(feedback)
    if level in (Feedback.NONE, Feedback.BARE):
        return bare_report(check)
    if level is Feedback.FULL:
        return full_report(artifact, check)
    return diagnostics_report(artifact, check)


# a round's extraction note when the model's reply ended at the output token limit (finish_reason "length")
CUT_AT_TOKEN_LIMIT = "the reply stopped at the output token limit (finish_reason: length): its model is incomplete"


def repair_request(artifact: Artifact | None, check: CheckResult | None, extraction_error: str | None,
                   language_name: str, feedback: Feedback | str = Feedback.DIAGNOSTICS, *,
                   cut_at_token_limit: bool = False) -> str:
    """The user message of a repair round. A reply cut at the output token limit is said to be so (with
    diagnostics or full feedback): the tool's errors on a cut model would otherwise point at its last line."""
    cut = (f"Your previous answer stopped at the output token limit, so the {language_name} model in it is "
           "incomplete; give the whole model, more concisely if needed.\n\n"
           if cut_at_token_limit and Feedback(feedback) in (Feedback.DIAGNOSTICS, Feedback.FULL) else "")
    if extraction_error:
        return (f"{cut}I could not use your previous answer: {extraction_error}\n"
                f"Reply with the complete corrected {language_name} model.")
    assert check is not None
    return (cut + feedback_report(artifact, check, feedback)
            + f"\n\nFix every problem above and reply with the complete corrected {language_name} model "
              "(all files, not a diff), each file in its own fenced code block.")
