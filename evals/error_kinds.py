"""What kind of error ended an attempt: the model's side or the harness's side.

An attempt with status ``error`` did not run to its end, so its pass@1 of 0 says nothing about the model
unless the cause was the model call itself. Reports and ``sysmo view`` show the kind next to every count:

- ``model``: the model call failed for good (provider error, rate limit after retries, bad reply format);
- ``budget``: a cost or token cap stopped the attempt;
- ``infrastructure``: anything else on the harness's side (a tool crashed or is missing, the sandbox,
  an agent's own code, an unreadable output, the attempt's wall-clock limit ``--attempt-timeout``).

>>> error_kind("error", "model call failed: RateLimitError")
'model'
>>> error_kind("error", "TLC crashed: exit 137")
'infrastructure'
>>> error_kind("error", "attempt wall-clock limit of 60 s (--attempt-timeout) reached in graph step 'generate'")
'infrastructure'
>>> error_kind("passed", None) is None
True
"""

from __future__ import annotations

ERROR_KINDS = ("model", "budget", "infrastructure")
_MODEL_MARKERS = ("model call", "llm", "litellm", "rate limit", "ratelimit", "api key", "api_key", "provider",
                  "context length", "context window", "completion")
_BUDGET_MARKERS = ("budget", "max_cost", "max-cost", "token cap", "cost cap", "max_tokens_total")
# the harness stopped the attempt on the clock: first, so a step named after the model does not read as its fault
_INFRASTRUCTURE_MARKERS = ("attempt wall-clock limit",)


def error_kind(status: str | None, error: str | None) -> str | None:
    """``model``, ``budget`` or ``infrastructure`` for an attempt that errored; None for one that did not."""
    if status != "error":
        return None
    text = (error or "").lower()
    if any(marker in text for marker in _INFRASTRUCTURE_MARKERS):
        return "infrastructure"
    if any(marker in text for marker in _BUDGET_MARKERS):
        return "budget"
    if any(marker in text for marker in _MODEL_MARKERS):
        return "model"
    return "infrastructure"
