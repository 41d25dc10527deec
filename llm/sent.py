"""What a provider received of a call's parameters: the request's parameters after litellm's own mapping.

litellm runs with ``drop_params=True``: a parameter a provider does not take is left out of the request, silently
(Anthropic and Bedrock take no ``seed``; ``openai/gpt-5`` takes only ``temperature=1``), and a kept one may be
renamed (``max_tokens`` is ``max_completion_tokens`` for gpt-5, ``maxTokens`` for Bedrock). ``delivered`` asks
litellm's mapping (``litellm.utils.get_optional_params``, the function ``litellm.completion`` builds the provider's
parameters with) about each parameter on its own, so every call records what was sent, under which name, and what
was dropped with litellm's reason (its ``UnsupportedParamsError`` when asked without dropping).

>>> delivered(mapping, {"temperature": 0.2, "seed": 7})
SentParams(sent={'seed': 7}, sent_as={}, dropped={'temperature': "gpt-5 doesn't support temperature=0.2 ..."})
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

# the parameters litellm maps per provider, by their OpenAI names (``get_optional_params``' keyword arguments);
# the rest of a request's extras (``mock_response``, a provider's own names) go through as given, unchecked
MAPPED = frozenset({
    "temperature", "seed", "max_tokens", "max_completion_tokens", "response_format", "tools", "tool_choice", "top_p",
    "stop", "n", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "user",
    "parallel_tool_calls", "reasoning_effort", "verbosity",
})
_LITELLM_PREFIX = re.compile(r"^litellm\.\w+:\s*")
_DROP_ADVICE = re.compile(r"\s*(To drop (these|unsupported params)|If you want to use these).*", re.S)
REASON_CHARS = 300

# (params, drop) -> the provider's parameters as litellm builds them; raises litellm's error when not dropping
Mapping = Callable[[dict[str, Any], bool], dict[str, Any]]


class SentParams(BaseModel):
    """A call's parameters as its provider received them (OpenAI names; ``sent_as`` names the provider's own
    where litellm renames one) and the ones litellm dropped, each with litellm's reason ("" when it gave none)."""

    sent: dict[str, Any] = Field(default_factory=dict)  # scalars as sent; tools and formats as ``shown`` text
    sent_as: dict[str, str] = Field(default_factory=dict)  # max_tokens -> max_completion_tokens, maxTokens, ...
    dropped: dict[str, str] = Field(default_factory=dict)

    def describe(self) -> str:
        """One line for people: ``temperature 0.2 · seed 7 · max_tokens 900 (as max_completion_tokens) · dropped:
        temperature (gpt-5 ...)``; "" when nothing was sent nor dropped."""
        parts = [f"{name} {value}" + (f" (as {self.sent_as[name]})" if name in self.sent_as else "")
                 for name, value in self.sent.items()]
        if self.dropped:
            parts.append("dropped: " + "; ".join(
                f"{name} ({why})" if why else f"{name} (the provider receives nothing for it)"
                for name, why in self.dropped.items()))
        return " · ".join(parts)


def shown(name: str, value: Any) -> str:
    """A parameter's value in a line: a tool list by its tools' names, a response format by its type."""
    if name == "tools" and isinstance(value, list):
        return "[" + ", ".join(str((t.get("function") or {}).get("name", "?")) for t in value
                               if isinstance(t, dict)) + "]"
    if name == "response_format" and isinstance(value, dict):
        schema = (value.get("json_schema") or {}).get("name")
        return f"{value.get('type')}" + (f" {schema}" if schema else "")
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def reason(error: BaseException) -> str:
    """litellm's reason for not taking a parameter, without its class prefix and its advice on dropping."""
    text = _DROP_ADVICE.sub("", _LITELLM_PREFIX.sub("", str(error).strip())).strip()
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "..."


def delivered(mapping: Mapping, params: dict[str, Any]) -> SentParams:
    """What the provider receives of ``params`` (the request's, OpenAI names): each mapped parameter on its own
    against the mapping of none; a parameter that adds nothing was dropped, its reason litellm's error when it is
    asked not to drop."""
    baseline = mapping({}, True)
    out = SentParams()
    for name, value in params.items():
        if name not in MAPPED or value is None:
            continue
        mapped = mapping({name: value}, True)
        added = {k: v for k, v in mapped.items() if k not in baseline or baseline[k] != v}
        if not added:
            try:
                mapping({name: value}, False)
                why = ""
            except Exception as exc:  # litellm's UnsupportedParamsError (or a provider config's own error)
                why = reason(exc)
            out.dropped[name] = why
            continue
        # a scalar as the provider received it; a tool list or a response format by its names (as ``shown``)
        as_sent = added[name] if name in added else (next(iter(added.values())) if len(added) == 1 else value)
        out.sent[name] = shown(name, value) if isinstance(value, (dict, list)) else as_sent
        if name not in added:
            out.sent_as[name] = ", ".join(sorted(added))
    return out


def requested_text(params: dict[str, Any]) -> str:
    """A call's parameters as requested, in ``describe``'s form."""
    return " · ".join(f"{name} {shown(name, value)}" for name, value in params.items() if value is not None)


def received_text(sent_params: dict[str, Any] | None) -> str:
    """What the provider received (``LLMCallEvent.sent_params``), in ``describe``'s form; "" when not known."""
    return SentParams.model_validate(sent_params).describe() if sent_params else ""


def dropped_text(recorded: list[dict[str, Any] | None]) -> str:
    """The parameters the provider dropped in any of an attempt's calls (their ``sent_params``), each with how
    many calls and litellm's reason: ``seed in 4 of 4 calls (anthropic does not support ...)``; "" for none."""
    known = [SentParams.model_validate(r) for r in recorded if r]
    reasons: dict[str, str] = {}
    counts: dict[str, int] = {}
    for sent in known:
        for name, why in sent.dropped.items():
            counts[name] = counts.get(name, 0) + 1
            reasons.setdefault(name, why)
    return "; ".join(f"{name} in {n} of {len(recorded)} calls "
                     f"({reasons[name] or 'the provider receives nothing for it'})" for name, n in counts.items())
