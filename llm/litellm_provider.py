"""Hosted and self-served models through litellm (imported on first use: the import takes seconds)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from sysmo.errors import LLMError, UnknownNameError
from sysmo.llm.request import LLMRequest
from sysmo.llm.response import LLMResponse, ToolCall, Usage
from sysmo.llm.retry import LLMCallError
from sysmo.llm.roles import RoleConfig
from sysmo.llm.sent import SentParams, delivered
from sysmo.llm.transport import CallGuard, guarding, shared_async_client, shared_client
from sysmo.log import get_logger

log = get_logger("sysmo.llm")

NO_KEY = "sysmo-no-key"  # OpenAI clients insist on a key; self-hosted servers ignore it
BYTES_PER_CHAR = 6  # a JSON body spells a character in at most 6 bytes (``\uXXXX``)
BODY_SLACK = 1 << 20  # the reply's envelope (ids, usage, headers) beside its text
BYTES_PER_TOKEN = 4  # what a refused reply is charged per byte received when it carries no usable usage
MAPPING_MESSAGES = [{"role": "user", "content": "-"}]  # what litellm's parameter mapping is shown of the messages
# more tokens than any model's context window in one call (the largest is 2M): a count past it is not a count
MAX_CALL_TOKENS = 10_000_000
INVALID_RESPONSE = "Invalid response object"  # litellm's words for a 200 body it cannot make a completion of


def import_litellm() -> ModuleType:
    """litellm, with its bundled price map (no network fetch at import) and without its banner."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def usage_fault(raw_usage: Any) -> str | None:
    """Why a reply's ``usage`` cannot be charged as it says (a count that is negative, not an integer, or past
    ``MAX_CALL_TOKENS``), or None: a server must not lower what a run has spent, or blow its record up."""
    for name in ("prompt_tokens", "completion_tokens"):
        value = getattr(raw_usage, name, None) if not isinstance(raw_usage, dict) else raw_usage.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name} is {value!r}, not a count of tokens"
        if value < 0:
            return f"{name} is {value:,}, a negative count of tokens"
        if value > MAX_CALL_TOKENS:
            return f"{name} is {value:,}, more than any model's context window ({MAX_CALL_TOKENS:,})"
    return None


def price(model: str, usage: Usage, config: RoleConfig | None = None) -> tuple[float, str | None]:
    """USD for ``usage`` from the role's own price, else litellm's map; (0, why) when no price is known."""
    if config is not None and config.price_per_mtok is not None:
        inp, out = config.price_per_mtok
        return (usage.prompt_tokens * inp + usage.completion_tokens * out) / 1e6, None
    litellm = import_litellm()
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
        )
    except Exception:  # litellm raises several types for unmapped models
        return 0.0, (
            f"no price for {model!r} in litellm's cost map (a local or unknown model): cost counted as 0; "
            "price it with price_per_mtok: [INPUT_USD, OUTPUT_USD] per million tokens in its role config "
            "(experiment file: models: [{model: ..., price_per_mtok: [...]}], helper, judge)"
        )
    return float(prompt_cost + completion_cost), None


def provider_mapping(model: str, provider: str) -> Any:
    """litellm's own mapping of a request's parameters for ``model`` (litellm's name, without the provider prefix)
    at ``provider``: ``(params, drop) -> the provider's parameters`` (``llm.sent.Mapping``)."""
    from litellm.utils import get_optional_params

    def mapping(params: dict[str, Any], drop: bool) -> dict[str, Any]:
        return get_optional_params(model=model, custom_llm_provider=provider, drop_params=drop,
                                   messages=MAPPING_MESSAGES, **params)

    return mapping


# docs/models.md's table of what each provider family receives (tests/test_llm_sent_params.py regenerates it)
DOC_TABLE_MODELS = ["openai/gpt-4o-mini", "openai/qwen2.5-coder-32b", "openai/gpt-5", "openai/o3",
                    "anthropic/claude-3-5-sonnet-20240620", "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
                    "gemini/gemini-1.5-pro", "mistral/mistral-large-latest", "ollama/llama3"]
DOC_TABLE_PARAMS: dict[str, Any] = {  # a generator call of sysmo: its temperature, seed, token cap, format, tools
    "temperature": 0.2, "seed": 7, "max_tokens": 1000, "response_format": {"type": "json_object"},
    "tools": [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object",
                                                                                    "properties": {}}}}]}


def parameter_table(models: list[str], params: dict[str, Any]) -> str:
    """A Markdown table of what each model's provider receives of ``params`` (litellm's mapping, no network): one
    row per model, one column per parameter, "sent", "sent as NAME" or "dropped" (docs/models.md shows it)."""
    litellm = import_litellm()
    lines = ["| model (provider) | " + " | ".join(f"`{name}`" for name in params) + " |",
             "|---|" + "---|" * len(params)]
    for model in models:
        name, provider, _, _ = litellm.get_llm_provider(model)
        sent = delivered(provider_mapping(name, provider), params)
        cells = ["dropped" if p in sent.dropped else f"sent as `{sent.sent_as[p]}`" if p in sent.sent_as else "sent"
                 for p in params]
        lines.append(f"| `{model}` ({provider}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


class LiteLLMProvider:
    """One role's model via ``litellm.completion``. Validates the model name and the API key up front."""

    is_control = False

    def __init__(self, config: RoleConfig) -> None:
        self.config = config
        self.litellm = import_litellm()
        try:
            self.model_name, self.name, _, _ = self.litellm.get_llm_provider(config.model, api_base=config.api_base)
        except Exception as exc:
            raise UnknownNameError(
                f"litellm does not know the model {config.model!r}: prefix it with a provider, e.g. "
                "openai/gpt-4o-mini, anthropic/claude-3-5-sonnet-20240620, ollama/llama3; for an "
                "OpenAI-compatible server use openai/<served-name> with api_base; offline: mockllm/<script> "
                "or reference"
            ) from exc
        self.api_key = self._api_key()
        self._delivered: dict[str, SentParams] = {}  # by the request's parameters (JSON)

    def delivered(self, request: LLMRequest) -> SentParams | None:
        """What the provider receives of the request's parameters (``llm.sent``): litellm's own mapping for this
        model and provider, with ``drop_params`` as the call has it; worked out once per set of parameters. None
        when the mapping itself fails (the call's record keeps the parameters as requested)."""
        params = request.params()
        key = json.dumps(params, sort_keys=True, default=str)
        found = self._delivered.get(key)
        if found is None:
            try:
                found = self._delivered[key] = delivered(self._mapping, params)
            except Exception as exc:  # litellm's mapping raising on a parameter set (dropping should not)
                log.warning("llm.sent_params_unknown", model=self.config.model, error=str(exc)[:200])
                return None
        return found

    def _mapping(self, params: dict[str, Any], drop: bool) -> dict[str, Any]:
        return provider_mapping(self.model_name, self.name)(params, drop)

    def unpriced(self) -> str | None:
        """Why this model's calls would be counted as $0 (no price in litellm's map, none configured); None
        when it is priced."""
        return price(self.config.model, Usage(prompt_tokens=1000, completion_tokens=1000), self.config)[1]

    def _api_key(self) -> str | None:
        env = self.config.api_key_env
        if env:
            key = os.environ.get(env)
            if not key:
                raise LLMError(
                    f"model {self.config.model!r} needs an API key: set the environment variable {env}"
                )
            return key
        if self.config.api_base:
            # never send a hosted provider's key to an arbitrary server; name api_key_env to send one
            return NO_KEY
        check = self.litellm.validate_environment(self.config.model)
        missing = [k for k in check.get("missing_keys", []) if k.endswith(("_KEY", "_TOKEN"))]
        if missing:
            raise LLMError(
                f"model {self.config.model!r} needs an API key: set {' or '.join(missing)} "
                "(or api_key_env in the role config)"
            )
        return None

    def _kwargs(self, request: LLMRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": request.messages,
            "timeout": self.config.timeout_s,
            "max_retries": 0,  # retries are ours (tenacity), so every HTTP attempt is seen and logged
            "drop_params": True,  # a parameter one provider lacks is dropped, not an error
        }
        if self.config.api_base:
            kwargs["api_base"] = self.config.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        for name in ("temperature", "max_tokens", "response_format"):
            value = getattr(request, name)
            if value is not None:
                kwargs[name] = value
        if request.tools:
            kwargs["tools"] = request.tools
            # litellm 1.106 otherwise imports its MCP gateway (the optional `mcp` package) for any tools
            kwargs["_skip_mcp_handler"] = True
        kwargs.update(request.extra)
        return kwargs

    def _guard(self) -> CallGuard | None:
        """The deadline and byte cap of one HTTP attempt, for the OpenAI-compatible endpoints (whose SDK takes
        an httpx client); None for other providers, which keep litellm's per-read timeout."""
        if self.name != "openai":
            return None
        cap = self.config.max_reply_chars
        return CallGuard(deadline_s=self.config.timeout_s,
                         max_bytes=None if cap is None else cap * BYTES_PER_CHAR + BODY_SLACK)

    def _sdk_client(self, http: Any, is_async: bool) -> Any:
        import openai

        kind = openai.AsyncOpenAI if is_async else openai.OpenAI
        return kind(api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or NO_KEY,
                    base_url=self.config.api_base, http_client=http, max_retries=0, timeout=self.config.timeout_s)

    def complete(self, request: LLMRequest) -> LLMResponse:
        start = time.perf_counter()
        guard = self._guard()
        kwargs = self._kwargs(request)
        try:
            if guard is not None:
                http = shared_client(self.config.api_base, self.config.timeout_s)
                kwargs["client"] = self._sdk_client(http, is_async=False)
                with guarding(guard):
                    raw = self.litellm.completion(**kwargs)
            else:
                raw = self.litellm.completion(**kwargs)
        except Exception as exc:
            raise self._refused(exc, guard, request) from exc
        return self._convert(raw, request, time.perf_counter() - start, guard)

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        start = time.perf_counter()
        guard = self._guard()
        kwargs = self._kwargs(request)
        try:
            if guard is not None:
                http = await shared_async_client(self.config.api_base, self.config.timeout_s)
                kwargs["client"] = self._sdk_client(http, is_async=True)
                with guarding(guard):
                    raw = await self.litellm.acompletion(**kwargs)
            else:
                raw = await self.litellm.acompletion(**kwargs)
        except Exception as exc:
            raise self._refused(exc, guard, request) from exc
        return self._convert(raw, request, time.perf_counter() - start, guard)

    def _refused(self, exc: Exception, guard: CallGuard | None, request: LLMRequest) -> Exception:
        """``exc`` as the error to record (``refused_error``), a refused reply's prompt counted by litellm."""
        return refused_error(exc, guard, self.config, self.config.model,
                             lambda: self._estimated_usage(request, "", []))

    def _malformed(self, why: str, request: LLMRequest, received: int) -> LLMCallError:
        """A 200 reply whose content cannot be taken as a completion (``why``), charged at its size."""
        return malformed_error(why, self.config, self.config.model, lambda: self._estimated_usage(request, "", []),
                               received)

    def _convert(self, raw: Any, request: LLMRequest, latency_s: float, guard: CallGuard | None = None) -> LLMResponse:
        if not getattr(raw, "choices", None):
            raise LLMError(f"model {self.config.model!r} answered without any choice")
        raw_usage = getattr(raw, "usage", None)
        fault = usage_fault(raw_usage) if raw_usage is not None else None
        if fault is not None:
            received = guard.received if guard is not None and guard.received else len(json.dumps(_raw_json(raw)))
            raise self._malformed(f"its usage says {fault}", request, received)
        choice = raw.choices[0]
        message = choice.message
        calls = [
            ToolCall.parse(c.id or f"call_{i}", c.function.name, c.function.arguments)
            for i, c in enumerate(message.tool_calls or [])
        ]
        usage = Usage(
            prompt_tokens=getattr(raw_usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(raw_usage, "completion_tokens", 0) or 0,
        )
        if usage.total_tokens == 0 and (message.content or calls):
            usage = self._estimated_usage(request, message.content or "", calls)
        cost, note = price(self.config.model, usage, self.config)
        hidden = getattr(raw, "_hidden_params", {}) or {}
        return LLMResponse(
            text=message.content or "",
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            model=self.config.model,
            served_model=getattr(raw, "model", None),
            provider=hidden.get("custom_llm_provider") or self.name,
            role=request.role,
            sample_index=request.sample_index,
            usage=usage,
            cost_usd=cost,
            spend_usd=cost,
            cost_note=note,
            latency_s=latency_s,
            raw=_raw_json(raw),
            sent_params=self.delivered(request),
        )

    def _estimated_usage(self, request: LLMRequest, text: str, calls: list[ToolCall]) -> Usage:
        """Token counts by litellm's tokenizer for a server that reported none (``estimated_usage``)."""
        return estimated_usage(self.config.model, request.messages, text, calls)


def estimated_usage(model: str, messages: list[dict[str, Any]], text: str, calls: list[ToolCall]) -> Usage:
    """Token counts by litellm's tokenizer (bundled: no download) for a server that reported none (some
    OpenAI-compatible servers and proxies), so ``--max-total-tokens`` and the cost still count the call; zero if
    it cannot count."""
    litellm = import_litellm()
    try:
        prompt = litellm.token_counter(model=model, messages=messages)
        answer = text + "".join(json.dumps(c.model_dump(mode="json")) for c in calls)
        completion = litellm.token_counter(model=model, text=answer)
    except Exception as exc:  # a tokenizer litellm cannot load offline
        log.warning("llm.usage_not_counted", model=model, error=str(exc)[:200])
        return Usage()
    log.info("llm.usage_estimated", model=model, prompt_tokens=prompt, completion_tokens=completion)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, estimated=True)


def refused_error(exc: Exception, guard: CallGuard | None, config: RoleConfig, priced_as: str,
                  estimate: Callable[[], Usage]) -> Exception:
    """``exc`` as the error to record: a reply cut at the byte cap or the deadline, or a 200 whose body is not
    JSON, becomes an ``LLMCallError`` charged what the server billed (``estimate()``: the prompt's tokens, the
    bytes received as completion tokens, priced as ``priced_as``); anything else stays as it is. Shared by the
    providers whose HTTP goes through ``transport``'s guarded clients."""
    received = guard.received if guard else 0
    model = repr(config.model)
    if guard is not None and guard.connect_error is not None and guard.tripped is None:
        return guard.connect_error  # no server answered: a connection failure (retried), not litellm's 500
    if guard is not None and guard.tripped == "size":
        message = (f"{model} sent a reply of more than {guard.max_bytes:,} bytes (max_reply_chars "
                   f"{config.max_reply_chars:,} in the model's settings); it was refused while it arrived "
                   f"and not kept")
        kind = "ReplyTooLarge"
    elif guard is not None and guard.tripped == "deadline" and received:
        message = (f"{model} was still sending its reply when the call's deadline of {guard.deadline_s:g} s "
                   f"(timeout_s in the model's settings) passed, after {received:,} bytes; not retried")
        kind = "DeadlineExceeded"
    elif _json_error_in(exc):
        message = (f"{model} answered with a body that is not valid JSON ({_json_error_in(exc)}); the server "
                   "or a proxy in front of it is broken")
        kind = "MalformedReply"
    elif INVALID_RESPONSE in str(exc):
        # without the guard's count (providers other than OpenAI-compatible endpoints), the size of the
        # reply is that of litellm's report, which quotes it whole
        return malformed_error(_shape_fault(str(exc)), config, priced_as, estimate,
                               received or len(str(exc).encode()))
    else:
        return exc
    return charged_error(message, kind, config, priced_as, estimate, received)


def malformed_error(why: str, config: RoleConfig, priced_as: str, estimate: Callable[[], Usage],
                    received: int) -> LLMCallError:
    """A 200 reply whose content cannot be taken as a completion (``why``), charged at its size."""
    message = (f"{config.model!r} answered with a reply that is not a usable completion ({why}); it was "
               f"refused and charged at its size, {received:,} bytes (one token per {BYTES_PER_TOKEN} bytes)")
    return charged_error(message, "MalformedReply", config, priced_as, estimate, received)


def charged_error(message: str, kind: str, config: RoleConfig, priced_as: str, estimate: Callable[[], Usage],
                  received: int) -> LLMCallError:
    """The refusal of a reply, charged the prompt's tokens (``estimate()``) and one token per ``BYTES_PER_TOKEN``
    bytes received, at ``priced_as``'s price (not retried: the server would only do it again)."""
    usage = estimate() if received else Usage()
    usage = usage.model_copy(update={"completion_tokens": -(-received // BYTES_PER_TOKEN), "estimated": True})
    cost, _ = price(priced_as, usage, config)
    log.warning("llm.reply_refused", model=config.model, kind=kind, bytes=received,
                prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens, cost_usd=cost)
    return LLMCallError(message, status_code=200 if kind == "MalformedReply" else None, retryable=False,
                        error_class=kind, prompt_tokens=usage.prompt_tokens,
                        completion_tokens=usage.completion_tokens, cost_usd=cost)


def _shape_fault(text: str) -> str:
    """What litellm found wrong in a reply it could not convert: the usage's fields it names, else the shape."""
    if re.search(r"validation errors? for Usage", text):
        fields = re.findall(r"^(\w+)\n\s+(.+?) \[type=", text, re.M)
        said = "; ".join(f"{name}: {why}" for name, why in fields[:3]) or "not counts of tokens"
        return f"its usage is not a count of tokens ({said})"
    return "it does not have the shape of a chat completion"


def _json_error_in(exc: BaseException) -> str | None:
    """The JSON decoding error in ``exc``'s chain (litellm reports an unparsable 200 as a 500), if there is one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, json.JSONDecodeError):
            return str(current)
        current = current.__cause__ or current.__context__
    return None


def _raw_json(raw: Any) -> dict[str, Any]:
    """The provider's raw answer as plain JSON; lone surrogates (not encodable as UTF-8) become U+FFFD."""
    from sysmo.llm.client import repair_surrogates

    text = json.dumps(raw.model_dump(mode="python", warnings=False), default=str, ensure_ascii=False)
    return json.loads(repair_surrogates(text))
