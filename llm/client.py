"""``LLM``: the one way sysmo calls a model: roles, cache, retries, concurrency limits, accounting, events.

Every call, answered, cached or failed, is recorded in one place (``LLM._record``): the role's spend, the
``on_call`` callback, and an ``LLMCallEvent`` (full request and reply, or the error) in the current attempt's
event log (``sysmo.contracts.events.collecting``), which the store keeps in its ``events`` table.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sysmo.contracts.events import collecting_now, emit
from sysmo.contracts.artifact import Artifact
from sysmo.errors import ConfigError, LLMError, ReplayEndedError, SysmoError
from sysmo.llm.cache import ResponseCache
from sysmo.llm.limits import SHARED_LIMITS, ConcurrencyLimits
from sysmo.llm.mockllm import MockLLMProvider, MockScript, find_script
from sysmo.llm.reference import ReferenceProvider
from sysmo.llm.request import LLMRequest, Provider
from sysmo.llm.response import CallContext, LLMCallRecord, LLMResponse, call_event
from sysmo.llm.retry import (LLMCallError, connection_detail, is_connection_error, is_retryable, notify_retry,
                             retry_policy, status_of)
from sysmo.llm.roles import ModelRoles, RoleConfig
from sysmo.llm.sent import SentParams
from sysmo.log import get_logger
from tenacity import RetryCallState

log = get_logger("sysmo.llm")


def repair_surrogates(text: str) -> str:
    """``text`` with lone UTF-16 surrogates (which UTF-8 cannot encode) replaced by U+FFFD; pairs are joined."""
    try:
        text.encode("utf-8")  # fails exactly on surrogates (in C: 2.4k characters in microseconds, not 0.25 ms)
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def reasoning_text(raw: dict[str, Any]) -> str:
    """The reasoning a reply carries beside its content (``reasoning_content``, thinking blocks), as litellm
    passes it on in the raw answer."""
    choices = raw.get("choices") or [{}]
    message = (choices[0].get("message") if isinstance(choices[0], dict) else None) or {}
    parts = [message.get("reasoning_content")]
    parts += [block.get("thinking") for block in message.get("thinking_blocks") or [] if isinstance(block, dict)]
    return "".join(p for p in parts if isinstance(p, str))


def reply_sizes(response: LLMResponse) -> tuple[int, int, int]:
    """What a reply carries, in characters: its content, its tool calls (each one's name and arguments) and its
    reasoning text. ``max_reply_chars`` caps their sum: each is stored, and tool calls are sent back in later
    requests."""
    calls = sum(len(call.name) + len(call.arguments_json) for call in response.tool_calls)
    return len(response.text), calls, len(reasoning_text(response.raw))


def checked_reply(response: LLMResponse, max_chars: int | None) -> LLMResponse:
    """A reply that can be stored: lone surrogates repaired, and refused when what it carries (``reply_sizes``)
    is past the reply-size cap."""
    text = repair_surrogates(response.text)
    content, calls, reasoning = reply_sizes(response)
    size = content + calls + reasoning
    if max_chars is not None and size > max_chars:
        parts = ", ".join(f"{n:,} {what}" for n, what in ((content, "of content"), (calls, "in tool calls"),
                                                           (reasoning, "of reasoning")) if n)
        raise LLMCallError(f"{response.model!r} replied with {size:,} characters ({parts}), more than the cap of "
                           f"{max_chars:,} (max_reply_chars in the model's settings); the reply was not kept",
                           retryable=False, error_class="ReplyTooLarge",
                           prompt_tokens=response.usage.prompt_tokens,
                           completion_tokens=response.usage.completion_tokens, cost_usd=response.cost_usd)
    return response if text is response.text else response.model_copy(update={"text": text})


def charge_of(error: BaseException) -> tuple[int, int, float]:
    """(prompt tokens, completion tokens, USD) a failed call was charged: a refused reply the server billed."""
    return (int(getattr(error, "prompt_tokens", 0) or 0), int(getattr(error, "completion_tokens", 0) or 0),
            float(getattr(error, "cost_usd", 0.0) or 0.0))


def counted(value: float) -> float:
    """What a call adds to a spend: never less than nothing (a count from an old cache or a replay whose usage
    was negative or not a number must not lower a run's spend, and so its budget)."""
    return value if value > 0 else 0  # NaN > 0 is False


class RoleSpend(BaseModel):
    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0  # what the answers cost when they were made
    spend_usd: float = 0.0  # what this process paid


def default_cache_path() -> Path:
    from sysmo.config import settings

    return settings().home / "llm_cache.sqlite"


@dataclass
class _Call:
    """One call in flight: its role config, request, cache key, clock start, then either the cached answer
    (``hit``) or the provider to ask, and the tries so far."""

    config: RoleConfig
    request: LLMRequest
    key: str
    start: float
    provider: Provider | None = None
    hit: LLMResponse | None = None
    attempts: int = 0

    @property
    def asked(self) -> Provider:
        """The provider of a cache miss."""
        assert self.provider is not None, "a cache hit asks no provider"
        return self.provider


@functools.lru_cache(maxsize=64)
def json_schema_format(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI ``response_format`` asking for JSON that fits ``model`` (built once per model class)."""
    return {"type": "json_schema", "json_schema": {"name": model.__name__, "schema": model.model_json_schema()}}


class LLM:
    """Every model call goes through ``complete`` / ``acomplete``.

    >>> llm = LLM(ModelRoles(generator="openai/gpt-4o-mini", helper="mockllm/default"))
    >>> r = llm.complete([{"role": "user", "content": "Write a TLA+ spec ..."}], sample_index=2)
    >>> r.text, r.usage.prompt_tokens, r.cost_usd, r.cached

    ``cache``: a ``ResponseCache``, a path, ``None`` for ``<settings().home>/llm_cache.sqlite``, or ``False``.
    ``on_call`` receives an ``LLMCallRecord`` for every call; every call is also an ``LLMCallEvent`` of the
    attempt being collected (``contracts.events.collecting``), which the store persists with the attempt.
    ``scripts`` / ``reference`` supply the offline providers in code instead of files / the call context;
    ``data_dir`` is where ``replay/...`` models read published outputs (default: the configured data dir).
    ``provider`` answers every role instead of the configured models (``llm.recorded`` for ``sysmo replay``).
    """

    def __init__(
        self,
        roles: ModelRoles | RoleConfig | str,
        *,
        cache: ResponseCache | Path | str | bool | None = None,
        on_call: Callable[[LLMCallRecord], None] | None = None,
        limits: ConcurrencyLimits | None = None,
        scripts: dict[str, MockScript] | None = None,
        reference: Artifact | None = None,
        data_dir: Path | str | None = None,
        provider: Provider | None = None,
    ) -> None:
        self.roles = roles if isinstance(roles, ModelRoles) else ModelRoles.model_validate(roles)
        if cache is False:
            self.cache: ResponseCache | None = None
        elif isinstance(cache, ResponseCache):
            self.cache = cache
        else:
            self.cache = ResponseCache(default_cache_path() if cache in (None, True) else Path(cache))
        self.on_call = on_call
        self.limits = limits or SHARED_LIMITS
        self.scripts = scripts or {}
        self.reference = reference
        self.data_dir = data_dir  # where replay/<source>:... finds its published outputs (else $SYSMO_DATA_DIR)
        # cacheable requests being asked, per (event loop, cache key): the same request waits for the first
        self._in_flight: dict[tuple[int, str], asyncio.Future] = {}
        self.override = provider
        self.spend: dict[str, RoleSpend] = {}
        self._providers: dict[str, Provider] = {}  # by the role config's JSON: equal configs share a provider
        self._role_providers: dict[str, tuple[RoleConfig, Provider]] = {}  # by role, for the config it was built for
        self._lock = threading.Lock()

    # -- providers
    def config(self, role: str) -> RoleConfig:
        return self.roles.for_role(role)

    def provider(self, role: str) -> Provider:
        """The role's provider, built on first use (this is where a bad name or a missing key is reported)."""
        config = self.config(role)
        known = self._role_providers.get(role)
        if known is not None and known[0] is config:  # every call asks: no JSON key while the role's config stays
            return known[1]
        key = config.model_dump_json()
        with self._lock:
            if key not in self._providers:
                self._providers[key] = self._build(config)
            self._role_providers[role] = (config, self._providers[key])
            return self._providers[key]

    def _build(self, config: RoleConfig) -> Provider:
        if self.override is not None:
            return self.override
        if config.model == "reference":
            return ReferenceProvider(self.reference)
        if config.model.startswith("replay/"):
            from sysmo.llm.replay import ReplayProvider

            return ReplayProvider.from_name(config.model, self.data_dir)
        if config.model == "replay":  # the judge: the stored judge answers of the generator's replay source
            from sysmo.llm.replay import ReplayProvider

            if not self.roles.generator.model.startswith("replay/"):
                raise ConfigError("the replay judge needs a replay/<source>:<model> generator (the stored judge "
                                  f"answers are about its outputs), not {self.roles.generator.model!r}")
            return ReplayProvider.from_name(self.roles.generator.model, self.data_dir)
        if config.model.startswith("mockllm/"):
            name = config.model.split("/", 1)[1]
            script = self.scripts.get(name) or find_script(name, config.script)
            return MockLLMProvider(config.model, script)
        if config.model.startswith("langchain:"):
            from sysmo.llm.langchain_provider import LangChainProvider

            return LangChainProvider(config)
        from sysmo.llm.litellm_provider import LiteLLMProvider

        return LiteLLMProvider(config)

    def validate(self) -> None:
        """Build every role's provider now: unknown models and missing API keys fail here, not mid-run."""
        for role in ("generator", "helper", "judge"):
            try:
                self.provider(role)
            except ConfigError:
                if role == "generator":
                    raise

    def unpriced(self) -> dict[str, str]:
        """The models of this client's roles whose spend cannot be counted (no known price), each with why:
        their calls cost $0 in the record and a cost cap never sees them."""
        found: dict[str, str] = {}
        for role in ("generator", "helper", "judge"):
            try:
                provider = self.provider(role)
            except ConfigError:  # a role this generator cannot have (reference, replay): never called
                continue
            # only a provider that charges (litellm's) has a price to lack; the offline ones cost nothing
            why = provider.unpriced() if hasattr(provider, "unpriced") else None
            if why:
                found.setdefault(self.config(role).model, why)
        return found

    # -- calls
    def _request(
        self,
        messages: list[dict[str, Any]],
        role: str,
        sample_index: int,
        temperature: float | None,
        max_tokens: int | None,
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | type[BaseModel] | None,
        context: CallContext | None,
        extra: dict[str, Any] | None,
    ) -> tuple[RoleConfig, LLMRequest]:
        config = self.config(role)
        if not messages or not all(isinstance(m, dict) and "role" in m for m in messages):
            raise LLMError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
        if isinstance(response_format, type) and issubclass(response_format, BaseModel):
            response_format = json_schema_format(response_format)
        request = LLMRequest(
            model=config.model,
            role=role,
            messages=messages,
            sample_index=sample_index,
            temperature=config.temperature if temperature is None else temperature,
            max_tokens=config.max_tokens if max_tokens is None else max_tokens,
            tools=tools,
            response_format=response_format,
            api_base=config.api_base,
            extra={**config.extra, **(extra or {})},
            context=context,
        )
        return config, request

    def _lookup(self, config: RoleConfig, request: LLMRequest, key: str, start: float) -> LLMResponse | None:
        # before the provider is built: replaying a cached run needs neither litellm's import nor an API key
        if self.cache is None or not config.cache or config.is_offline:
            return None  # controls and replays are free and deterministic: caching them would only hide script edits
        hit = self.cache.get(key)
        if hit is None:
            return None
        response = hit.model_copy(
            update={
                "cached": True,
                "spend_usd": 0.0,
                "original_latency_s": hit.latency_s,
                "role": request.role,
                "latency_s": time.perf_counter() - start,
                "attempts": 0,
            }
        )
        log.info(
            "llm.cache_hit",
            model=config.model,
            role=request.role,
            request_hash=key[:16],
            sample=request.sample_index,
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            cost_usd=response.cost_usd,
        )
        return response

    def _before_sleep(self, config: RoleConfig, request: LLMRequest) -> Callable[[RetryCallState], None]:
        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.warning(
                "llm.retry",
                model=config.model,
                role=request.role,
                attempt=state.attempt_number,
                wait_s=round(state.upcoming_sleep, 3),
                status=status_of(exc) if exc else None,
                error=type(exc).__name__ if exc else None,
            )
            notify_retry(config.model, exc, state.upcoming_sleep)  # the run's progress line shows the wait

        return before_sleep

    def _fail(self, config: RoleConfig, exc: BaseException, attempts: int) -> SysmoError:
        if isinstance(exc, SysmoError):
            exc.model = config.model  # type: ignore[attr-defined]
            return exc
        status = status_of(exc)
        retryable = is_retryable(exc)
        detail = str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__
        if status in (401, 403):
            hint = (
                f"set {config.api_key_env}"
                if config.api_key_env
                else "check the provider's API key environment variable (or api_key_env in the role config)"
            )
            message = f"authentication failed for {config.model!r} ({status}): {hint}. {detail}"
        elif status == 404:
            message = (
                f"model {config.model!r} was not found by the server ({status}): check the name. {detail}"
            )
        elif retryable:
            if is_connection_error(exc):
                where = f" at {config.api_base}" if config.api_base else ""
                message = (f"{config.model!r} could not reach the server{where} after {attempts} attempts "
                           f"(no HTTP answer): {connection_detail(exc)}")
            else:
                message = f"{config.model!r} kept failing after {attempts} attempts: {detail}"
        else:
            message = f"{config.model!r} rejected the request ({status or type(exc).__name__}): {detail}"
        error_class = "ConnectionError" if is_connection_error(exc) else type(exc).__name__
        error = LLMCallError(message, status_code=status, retryable=retryable, attempts=attempts,
                             error_class=error_class)
        error.model = config.model  # type: ignore[attr-defined]
        return error

    def _record(
        self,
        config: RoleConfig,
        provider: Provider | None,
        request: LLMRequest,
        key: str,
        response: LLMResponse | None,
        error: BaseException | None,
        latency_s: float,
    ) -> None:
        with self._lock:
            spend = self.spend.get(request.role)
            if spend is None:
                spend = self.spend[request.role] = RoleSpend()
            spend.calls += 1
            if error is not None:
                spend.failed_calls += 1
                charged = charge_of(error)
                spend.prompt_tokens += int(counted(charged[0]))
                spend.completion_tokens += int(counted(charged[1]))
                spend.cost_usd += counted(charged[2])
                spend.spend_usd += counted(charged[2])
            if response is not None:
                spend.cached_calls += int(response.cached)
                spend.prompt_tokens += int(counted(response.usage.prompt_tokens))
                spend.completion_tokens += int(counted(response.usage.completion_tokens))
                spend.cost_usd += counted(response.cost_usd)
                spend.spend_usd += counted(response.spend_usd)
        collecting = collecting_now()
        if not collecting and self.on_call is None:
            return
        charged = charge_of(error) if error is not None else (0, 0, 0.0)
        fields: dict[str, Any] = dict(
            role=request.role,
            model=config.model,
            provider=response.provider if response else (provider.name if provider else "unknown"),
            is_control=config.is_control,
            request_hash=key,
            sample_index=request.sample_index,
            messages=request.messages,
            params=request.params(),
            sent_params=sent.model_dump() if (sent := self._sent(provider, request, response)) else None,
            context=request.context,
            response=response,
            prompt_tokens=response.usage.prompt_tokens if response else charged[0],
            completion_tokens=response.usage.completion_tokens if response else charged[1],
            cost_usd=response.cost_usd if response else charged[2],
            spend_usd=response.spend_usd if response else charged[2],
            latency_s=latency_s,
            cached=bool(response and response.cached),
            error=str(error) if error else None,
            error_type=type(error).__name__ if error else None,
        )
        if collecting:  # the event straight from the fields: a record is made only for ``on_call``
            emit(call_event(**fields, error_class=getattr(error, "error_class", None)))
        if self.on_call is not None:
            self.on_call(LLMCallRecord(**fields))

    @staticmethod
    def _sent(provider: Provider | None, request: LLMRequest, response: LLMResponse | None) -> SentParams | None:
        """What the provider received of the request's parameters: the reply's record of it, else (a failed call)
        the provider's own mapping; None for a provider that does not map them (the offline ones)."""
        if response is not None:
            return response.sent_params
        return provider.delivered(request) if hasattr(provider, "delivered") else None

    def _finish(
        self,
        config: RoleConfig,
        provider: Provider,
        request: LLMRequest,
        key: str,
        response: LLMResponse,
        attempts: int,
        start: float,
    ) -> LLMResponse:
        response = response.model_copy(
            update={"request_hash": key, "attempts": attempts, "latency_s": time.perf_counter() - start}
        )
        if self.cache is not None and config.cache and not provider.is_control:
            self.cache.put(key, response)
        log.info(
            "llm.response",
            model=config.model,
            role=request.role,
            provider=response.provider,
            request_hash=key[:16],
            sample=request.sample_index,
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            cost_usd=response.cost_usd,
            latency_s=round(response.latency_s, 3),
            attempts=attempts,
            control=response.is_control,
        )
        self._record(config, provider, request, key, response, None, response.latency_s)
        return response

    def _failed(
        self,
        config: RoleConfig,
        provider: Provider | None,
        request: LLMRequest,
        key: str,
        exc: BaseException,
        attempts: int,
        start: float,
    ) -> SysmoError:
        error = self._fail(config, exc, attempts)
        # a replay source that ran out of replies (or lacks the task) is how a replayed attempt ends, not a fault
        (log.info if isinstance(exc, ReplayEndedError) else log.error)(
            "llm.replay_ended" if isinstance(exc, ReplayEndedError) else "llm.error",
            model=config.model,
            role=request.role,
            request_hash=key[:16],
            attempts=attempts,
            status=status_of(exc),
            error=str(error)[:300],
        )
        self._record(config, provider, request, key, None, error, time.perf_counter() - start)
        return error

    def _open(self, messages: list[dict[str, Any]], role: str, sample_index: int, temperature: float | None,
              max_tokens: int | None, tools: list[dict[str, Any]] | None,
              response_format: dict[str, Any] | type[BaseModel] | None, context: CallContext | None,
              extra: dict[str, Any] | None) -> _Call:
        """The call's request, with the cached answer (already recorded) or, for a miss, the provider to ask."""
        start = time.perf_counter()
        config, request = self._request(
            messages, role, sample_index, temperature, max_tokens, tools, response_format, context, extra
        )
        call = _Call(config, request, request.key(), start)
        try:
            call.hit = self._lookup(config, request, call.key, start)
            if call.hit is not None:
                self._record(config, None, request, call.key, call.hit, None, call.hit.latency_s)
                return call
            call.provider = self.provider(request.role)
        except Exception as exc:
            raise self._close_failed(call, exc) from exc
        log.info("llm.request", model=config.model, role=request.role, request_hash=call.key[:16],
                 sample=request.sample_index, messages=len(request.messages), tools=len(request.tools or []))
        call.start = time.perf_counter()  # latency is the model's, not litellm's first import
        return call

    def _close(self, call: _Call, response: LLMResponse) -> LLMResponse:
        try:
            response = checked_reply(response, call.config.max_reply_chars)
        except LLMCallError as exc:
            raise self._close_failed(call, exc) from exc
        return self._finish(call.config, call.asked, call.request, call.key, response, call.attempts, call.start)

    def _close_failed(self, call: _Call, exc: BaseException) -> SysmoError:
        return self._failed(call.config, call.provider, call.request, call.key, exc, call.attempts, call.start)

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str = "generator",
        sample_index: int = 0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | type[BaseModel] | None = None,
        context: CallContext | None = None,
        extra: dict[str, Any] | None = None,
    ) -> LLMResponse:
        """One answer for ``messages`` (OpenAI format). ``temperature``/``max_tokens`` override the role's;
        ``extra`` adds provider parameters (``tool_choice``, ``stop``, ``seed``) over the role's ``extra``.

        Raises ``LLMError`` (``LLMCallError`` with ``status_code`` for HTTP failures) once retries are spent.
        """
        call = self._open(messages, role, sample_index, temperature, max_tokens, tools, response_format,
                          context, extra)
        if call.hit is not None:
            return call.hit
        try:
            if call.asked.is_control:
                call.attempts = 1
                response = call.asked.complete(call.request)
            else:
                with self.limits.hold(call.config.limit_key, call.config.concurrency):
                    for attempt in retry_policy(call.config, self._before_sleep(call.config, call.request)):
                        with attempt:
                            call.attempts = attempt.retry_state.attempt_number
                            response = call.asked.complete(call.request)
        except Exception as exc:
            raise self._close_failed(call, exc) from exc
        return self._close(call, response)

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str = "generator",
        sample_index: int = 0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | type[BaseModel] | None = None,
        context: CallContext | None = None,
        extra: dict[str, Any] | None = None,
    ) -> LLMResponse:
        """``complete`` for asyncio callers; concurrency is bounded per provider within the event loop."""
        call = self._open(messages, role, sample_index, temperature, max_tokens, tools, response_format,
                          context, extra)
        if call.hit is not None:
            return call.hit
        hit = await self._after_same_request(call)
        if hit is not None:
            return hit
        if not self._cacheable(call):
            return await self._ask(call)
        slot = (id(asyncio.get_running_loop()), call.key)
        done = self._in_flight[slot] = asyncio.get_running_loop().create_future()
        try:
            return await self._ask(call)
        finally:
            self._in_flight.pop(slot, None)
            done.set_result(None)

    def _cacheable(self, call: _Call) -> bool:
        return (self.cache is not None and call.config.cache and not call.config.is_offline
                and not call.asked.is_control)

    async def _after_same_request(self, call: _Call) -> LLMResponse | None:
        """A cacheable request already in flight on this event loop (the arms of one sample that share their
        first request, asked at the same time): wait for it and answer from the cache, so they get one reply
        and pay for it once. None when nothing was in flight or its answer did not reach the cache."""
        if not self._cacheable(call):
            return None
        slot = (id(asyncio.get_running_loop()), call.key)
        waited = False
        while (pending := self._in_flight.get(slot)) is not None:
            await asyncio.shield(pending)
            waited = True
        if not waited:
            return None
        hit = self._lookup(call.config, call.request, call.key, call.start)
        if hit is not None:
            self._record(call.config, None, call.request, call.key, hit, None, hit.latency_s)
        return hit

    async def _ask(self, call: _Call) -> LLMResponse:
        """The provider's answer to a cache miss (retried and limited), recorded."""
        try:
            if call.asked.is_control:
                call.attempts = 1
                response = await call.asked.acomplete(call.request)
            else:
                async with self.limits.ahold(call.config.limit_key, call.config.concurrency):
                    async for attempt in retry_policy(
                        call.config, self._before_sleep(call.config, call.request), is_async=True
                    ):
                        with attempt:
                            call.attempts = attempt.retry_state.attempt_number
                            response = await call.asked.acomplete(call.request)
        except Exception as exc:
            raise self._close_failed(call, exc) from exc
        return self._close(call, response)
