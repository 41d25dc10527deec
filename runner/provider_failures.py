"""Fail fast on a provider that will refuse every call: a wrong or revoked key, no permission, an unknown model.

Such an answer (HTTP 401, 403 or 404; litellm's ``AuthenticationError``, ``PermissionDeniedError``,
``NotFoundError``) is never retried, and no later attempt would fare better. ``ProviderFailures`` counts, per model,
the attempts in a row that ended on one; at ``FATAL_STREAK`` (3: one may be a glitch of the server, three in a row
are not) the run starts no more attempts and stops with one line naming the model and the cause. Every attempt
already stored stays (``sysmo run --resume`` continues once the cause is fixed). An attempt of that model that got
any other outcome resets its count. Rate limits, 5xx answers and time-outs are not counted here: they keep their
retries (``llm.retry``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sysmo.contracts.attempt import Attempt, AttemptStatus, LLMCallSummary

FATAL_STREAK = 3
FATAL_ERROR_TYPES = {"AuthenticationError": "authentication failed", "PermissionDeniedError": "permission denied",
                     "NotFoundError": "model not found"}
FATAL_STATUS = {"(401)": "authentication failed", "(403)": "permission denied", "(404)": "model not found"}


def _calls(attempt: Attempt) -> list[LLMCallSummary]:
    return [c for r in attempt.rounds for c in r.llm_calls] + list(attempt.calls_outside_rounds)


def fatal_cause(attempt: Attempt) -> str | None:
    """Why ``attempt`` ended on a call no retry or later attempt can mend (its message), or None."""
    if attempt.status != AttemptStatus.ERROR:
        return None
    for call in reversed(_calls(attempt)):
        if call.error and call.error_type in FATAL_ERROR_TYPES:
            return call.error
    message = attempt.error or ""
    if message.startswith(("authentication failed for", "model ")) and any(s in message for s in FATAL_STATUS):
        return message  # llm.client's own wording for 401/403 and 404 (a call that left no summary)
    return None


@dataclass
class ProviderFailures:
    """Attempts in a row, per model, that ended on an authentication, permission or unknown-model error."""

    streak: int = FATAL_STREAK
    counts: dict[str, int] = field(default_factory=dict)

    def observe(self, model: str, attempt: Attempt) -> str | None:
        """Count ``attempt``; the reason to stop the run when ``model`` reached the streak, else None."""
        cause = fatal_cause(attempt)
        if cause is None:
            self.counts[model] = 0
            return None
        self.counts[model] = self.counts.get(model, 0) + 1
        if self.counts[model] < self.streak:
            return None
        first_line = cause.splitlines()[0][:300]
        return (f"{model!r} failed {self.counts[model]} attempts in a row with an error no retry can mend: "
                f"{first_line}")
