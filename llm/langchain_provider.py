"""LangChain chat models as sysmo's models: ``langchain:openai/<model>`` (langchain-openai's ``ChatOpenAI``, at
``api_base`` when one is set) and ``langchain:<module>:<factory>`` (any ``BaseChatModel`` the user's code returns).

The model is invoked inside the graph node that asked for the call, so the node's ``RunnableConfig`` (its
callbacks) reaches it: a LangChain tracer (LangSmith, Langfuse, OpenInference) records each call as an LLM run
under the node. Cache, retries, limits, the reply cap and the accounting stay the client's (``llm.client``).

>>> LLM(ModelRoles(generator=RoleConfig(model="langchain:openai/qwen2.5-coder", api_base="http://127.0.0.1:8000/v1")))
>>> LLM(ModelRoles(generator="langchain:my_models:azure_gpt4o"))  # my_models.azure_gpt4o() -> BaseChatModel
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from sysmo.errors import ConfigError, LLMError, UnknownNameError
from sysmo.llm.litellm_provider import (BODY_SLACK, BYTES_PER_CHAR, NO_KEY, estimated_usage, malformed_error, price,
                                       refused_error, usage_fault)
from sysmo.llm.request import LLMRequest
from sysmo.llm.response import LLMResponse, ToolCall, Usage
from sysmo.llm.retry import LLMCallError
from sysmo.llm.roles import RoleConfig
from sysmo.llm.sent import SentParams, shown
from sysmo.llm.transport import CallGuard, guarding, shared_async_client, shared_client
from sysmo.log import get_logger

log = get_logger("sysmo.llm")

PREFIX = "langchain:"
# ChatOpenAI fields that are request-body parameters (its ``_default_params``); other extras go in ``extra_body``
OPENAI_BODY_FIELDS = frozenset({
    "temperature", "max_tokens", "seed", "top_p", "stop", "n", "presence_penalty", "frequency_penalty",
    "logprobs", "top_logprobs", "logit_bias", "reasoning_effort", "service_tier", "verbosity",
})


@dataclass(frozen=True)
class LangChainName:
    """A parsed ``langchain:...`` model name: an OpenAI model for ``ChatOpenAI``, or a module and its factory."""

    openai_model: str | None = None
    module: str | None = None
    factory: str | None = None

    @classmethod
    def parse(cls, model: str) -> LangChainName:
        """``langchain:openai/<model>`` or ``langchain:<module>:<factory>``; anything else is a clear error."""
        rest = model.removeprefix(PREFIX)
        if rest.startswith("openai/") and len(rest) > len("openai/"):
            return cls(openai_model=rest.split("/", 1)[1])
        module, _, factory = rest.partition(":")
        if module and factory and ":" not in factory and all(p.isidentifier() for p in module.split(".")) \
                and factory.isidentifier():
            return cls(module=module, factory=factory)
        raise UnknownNameError(
            f"{model!r} is not a LangChain model name: use langchain:openai/<model> (ChatOpenAI, with --api-base "
            "for an OpenAI-compatible server) or langchain:<module>:<factory> (a function of your own module "
            "returning a LangChain BaseChatModel)")


def load_chat_model(name: LangChainName, model: str) -> Any:
    """The ``BaseChatModel`` the user's ``<module>:<factory>`` gives (the factory called with no arguments, or the
    model itself when the name is one); the current directory is searched too, as ``python -m`` would."""
    from langchain_core.language_models import BaseChatModel

    assert name.module is not None and name.factory is not None
    try:
        module = importlib.import_module(name.module)
    except ModuleNotFoundError as exc:
        if exc.name != name.module.split(".")[0] or os.getcwd() in sys.path:
            raise UnknownNameError(f"{model!r}: cannot import the module {name.module!r} ({exc}); put its folder "
                                   "on PYTHONPATH") from exc
        sys.path.append(os.getcwd())
        return load_chat_model(name, model)
    found = getattr(module, name.factory, None)
    if found is None:
        raise UnknownNameError(f"{model!r}: the module {name.module!r} has no {name.factory!r}")
    try:
        chat = found if isinstance(found, BaseChatModel) or not callable(found) else found()
    except Exception as exc:
        raise ConfigError(f"{model!r}: {name.module}.{name.factory}() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(chat, BaseChatModel):
        raise ConfigError(f"{model!r}: {name.module}.{name.factory} gave a {type(chat).__name__}, not a LangChain "
                          "chat model (langchain_core.language_models.BaseChatModel)")
    return chat


class LangChainProvider:
    """One role's model as a LangChain chat model; one invocation per HTTP attempt (the client retries)."""

    is_control = False

    def __init__(self, config: RoleConfig) -> None:
        self.config = config
        self.target = LangChainName.parse(config.model)
        self.chat: Any = None  # a factory's model, built once; ChatOpenAI is built per call (its parameters)
        if self.target.openai_model is not None:
            try:
                import langchain_openai  # noqa: F401  (a missing package is reported here, not mid-run)
            except ImportError as exc:
                raise ConfigError(f"{config.model!r} needs the langchain-openai package (a dependency of sysmo): "
                                  f"pip install -e . in the checkout ({exc})") from exc
            self.api_key = self._api_key()
            self.name = "langchain/openai"
            self.priced_as = f"openai/{self.target.openai_model}"
        else:
            if config.api_base or config.api_key_env:
                log.warning("llm.langchain_settings_ignored", model=config.model,
                            why="a factory's chat model has its own endpoint and key: api_base/api_key_env unused")
            self.chat = load_chat_model(self.target, config.model)
            ls = _ls_params(self.chat)
            provider, served = ls.get("ls_provider"), ls.get("ls_model_name")
            self.name = f"langchain/{provider or type(self.chat).__name__}"
            self.priced_as = f"{provider}/{served}" if provider and served else config.model

    def unpriced(self) -> str | None:
        """Why this model's calls would be counted as $0 (no ``price_per_mtok``, no litellm price); None if priced."""
        return price(self.priced_as, Usage(prompt_tokens=1000, completion_tokens=1000), self.config)[1]

    def _api_key(self) -> str:
        env = self.config.api_key_env
        if env:
            key = os.environ.get(env)
            if not key:
                raise LLMError(f"model {self.config.model!r} needs an API key: set the environment variable {env}")
            return key
        if self.config.api_base:
            return NO_KEY  # never send a hosted provider's key to an arbitrary server; name api_key_env to send one
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise LLMError(f"model {self.config.model!r} needs an API key: set OPENAI_API_KEY (or api_key_env in "
                           "the role config)")
        return key

    # -- the model of one call, and what it is sent
    def _call_params(self, request: LLMRequest) -> dict[str, Any]:
        """The request's parameters beside tools and response format (temperature, max_tokens, seed, extras)."""
        return {k: v for k, v in request.params().items() if k not in ("tools", "response_format", "tool_choice")}

    def _openai_model(self, request: LLMRequest, http: Any, ahttp: Any) -> tuple[Any, dict[str, Any]]:
        from langchain_openai import ChatOpenAI

        fields: dict[str, Any] = {}
        body: dict[str, Any] = {}
        for name, value in self._call_params(request).items():
            if name == "extra_body" and isinstance(value, dict):
                body.update(value)
            elif name == "max_tokens" and self.config.api_base:
                # ChatOpenAI renames it max_completion_tokens, which OpenAI-compatible servers may not read
                body[name] = value
            elif name in OPENAI_BODY_FIELDS:
                fields[name] = value
            else:
                body[name] = value  # a parameter ChatOpenAI has no field for is still sent, as litellm sends it
        chat = ChatOpenAI(model=self.target.openai_model, api_key=self.api_key, base_url=self.config.api_base,
                          timeout=self.config.timeout_s, max_retries=0, http_client=http, http_async_client=ahttp,
                          extra_body=body or None, **({"use_responses_api": False} if self.config.api_base else {}),
                          **fields)
        sent = {**fields, **body}
        if "max_tokens" in fields:  # OpenAI itself is sent the newer name
            sent["max_completion_tokens"] = sent.pop("max_tokens")
        return chat, sent

    def _factory_model(self, request: LLMRequest) -> tuple[Any, dict[str, Any]]:
        """The factory's model with each of the call's parameters (temperature, max_tokens, seed, the role's extras)
        that its class has a field of that name for, set on a copy; the others are not sent."""
        declared = type(self.chat).model_fields
        sent = {k: v for k, v in self._call_params(request).items() if k in declared}
        return (self.chat.model_copy(update=sent) if sent else self.chat), sent

    def _runnable(self, chat: Any, request: LLMRequest, sent: dict[str, Any]) -> Any:
        """``chat`` with the request's tools bound (``bind_tools``) or its output schema (``with_structured_output``,
        the raw message kept); ``sent`` gains what the model took."""
        is_openai = self.target.openai_model is not None
        if request.tools:
            choice = request.extra.get("tool_choice")
            try:
                bound = chat.bind_tools(request.tools, **({"tool_choice": choice} if choice is not None else {}))
            except NotImplementedError as exc:
                raise ConfigError(f"{self.config.model!r} cannot call tools ({type(chat).__name__} has no bind_tools); "
                                  "this agent needs a model that can") from exc
            sent.update(tools=request.tools, **({"tool_choice": choice} if choice is not None else {}))
            return bound
        format_ = request.response_format
        if format_ and format_.get("type") == "json_schema":
            spec = format_.get("json_schema") or {}
            # ChatOpenAI sends {"name", "schema"} as the client's response_format; others take a titled JSON schema
            schema = spec if is_openai else {**spec.get("schema", {}), "title": spec.get("name", "Answer")}
            try:
                structured = chat.with_structured_output(schema, include_raw=True,
                                                         **({"method": "json_schema"} if is_openai else {}))
            except NotImplementedError:  # no structured output: the prompt asks for the JSON, the agent reads it
                return chat
            sent["response_format"] = format_
            return structured
        if format_ and is_openai:
            sent["response_format"] = format_
            return chat.bind(response_format=format_)
        return chat

    def _run_config(self, request: LLMRequest) -> Any:
        """The graph node's ``RunnableConfig`` (its callbacks: the LLM run nests under the node), with the call's
        role, purpose and round as the run's metadata."""
        from langchain_core.runnables.config import ensure_config, merge_configs

        context = request.context
        metadata = {"sysmo_role": request.role, "sysmo_sample": request.sample_index,
                    "sysmo_purpose": context.purpose if context else None,
                    "sysmo_round": context.round if context else None,
                    "sysmo_task": context.task_id if context else None,
                    "sysmo_attempt": context.attempt_id if context else None}
        return merge_configs(ensure_config(), {"metadata": {k: v for k, v in metadata.items() if v is not None}})

    def _guard(self) -> CallGuard:
        cap = self.config.max_reply_chars
        return CallGuard(deadline_s=self.config.timeout_s,
                         max_bytes=None if cap is None else cap * BYTES_PER_CHAR + BODY_SLACK)

    # -- calls
    def complete(self, request: LLMRequest) -> LLMResponse:
        from langchain_core.messages import convert_to_messages

        start = time.perf_counter()
        messages = convert_to_messages(request.messages)
        guard = self._guard() if self.target.openai_model is not None else None
        try:
            if guard is not None:
                chat, sent = self._openai_model(request, shared_client(self.config.api_base, self.config.timeout_s),
                                                None)
                runnable = self._runnable(chat, request, sent)
                with guarding(guard):
                    output = runnable.invoke(messages, config=self._run_config(request))
            else:  # a factory's model keeps its own client and timeouts (a synchronous call cannot be cut short)
                chat, sent = self._factory_model(request)
                output = self._runnable(chat, request, sent).invoke(messages, config=self._run_config(request))
        except Exception as exc:
            raise self._refused(exc, guard, request) from exc
        return self._convert(output, request, sent, time.perf_counter() - start)

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        from langchain_core.messages import convert_to_messages

        start = time.perf_counter()
        messages = convert_to_messages(request.messages)
        guard = self._guard() if self.target.openai_model is not None else None
        try:
            if guard is not None:
                http = await shared_async_client(self.config.api_base, self.config.timeout_s)
                chat, sent = self._openai_model(request, None, http)
                runnable = self._runnable(chat, request, sent)
                with guarding(guard):
                    output = await runnable.ainvoke(messages, config=self._run_config(request))
            else:
                chat, sent = self._factory_model(request)
                runnable = self._runnable(chat, request, sent)
                try:
                    async with asyncio.timeout(self.config.timeout_s):
                        output = await runnable.ainvoke(messages, config=self._run_config(request))
                except TimeoutError as exc:
                    raise LLMCallError(f"{self.config.model!r} did not answer within its deadline of "
                                       f"{self.config.timeout_s:g} s (timeout_s in the model's settings)",
                                       retryable=True, error_class="Timeout") from exc
        except Exception as exc:
            raise self._refused(exc, guard, request) from exc
        return self._convert(output, request, sent, time.perf_counter() - start)

    def _refused(self, exc: Exception, guard: CallGuard | None, request: LLMRequest) -> Exception:
        if isinstance(exc, ConfigError | LLMCallError):
            return exc
        return refused_error(exc, guard, self.config, self.priced_as,
                             lambda: estimated_usage(self.priced_as, request.messages, "", []))

    def _convert(self, output: Any, request: LLMRequest, sent: dict[str, Any], latency_s: float) -> LLMResponse:
        parsed = None
        if isinstance(output, dict) and "raw" in output:  # with_structured_output(include_raw=True)
            output, parsed = output["raw"], output.get("parsed")
        message = output
        if not hasattr(message, "content"):
            raise LLMError(f"model {self.config.model!r} answered with a {type(message).__name__}, not a message")
        text = message.text if isinstance(message.text, str) else str(message.content or "")
        if not text and parsed is not None:  # a schema answered through a tool call: the JSON it carries
            text = json.dumps(parsed.model_dump(mode="json") if isinstance(parsed, BaseModel) else parsed)
        calls = _tool_calls(message)
        metadata = getattr(message, "usage_metadata", None)
        usage = Usage()
        fault = usage_fault({"prompt_tokens": metadata.get("input_tokens"),
                             "completion_tokens": metadata.get("output_tokens")}) if metadata else None
        if fault is not None:  # a count that is negative, not an integer or absurd: refused, charged at its size
            raise malformed_error(f"its usage says {fault}", self.config, self.priced_as,
                                  lambda: estimated_usage(self.priced_as, request.messages, "", []),
                                  len(json.dumps(_raw_json(message))))
        if metadata:
            usage = Usage(prompt_tokens=_tokens(metadata, "input_tokens"),
                          completion_tokens=_tokens(metadata, "output_tokens"))
        if usage.total_tokens == 0 and (text or calls):  # no usage reported: litellm's tokenizer, as for litellm's
            usage = estimated_usage(self.priced_as, request.messages, text, calls)
        cost, note = price(self.priced_as, usage, self.config)
        meta = getattr(message, "response_metadata", None) or {}
        return LLMResponse(
            text=text,
            tool_calls=calls,
            finish_reason=meta.get("finish_reason") or meta.get("stop_reason"),
            model=self.config.model,
            served_model=meta.get("model_name") or meta.get("model"),
            provider=self.name,
            role=request.role,
            sample_index=request.sample_index,
            usage=usage,
            cost_usd=cost,
            spend_usd=cost,
            cost_note=note,
            latency_s=latency_s,
            sent_params=sent_params(request, sent),
            raw=_raw_json(message),
        )


SENT_NAMES = ("temperature", "seed", "max_tokens", "response_format", "tools")  # as ``llm.sent`` records them


def sent_params(request: LLMRequest, sent: dict[str, Any]) -> SentParams:
    """What the chat model was given of the request's parameters (``sent``: the call's arguments and the fields
    set on the model), in ``llm.sent``'s terms; a parameter the model has no field for is dropped."""
    asked = request.params()
    given: dict[str, Any] = {}
    sent_as: dict[str, str] = {}
    dropped: dict[str, str] = {}
    for name in SENT_NAMES:
        if name not in asked:
            continue
        if name == "max_tokens" and "max_completion_tokens" in sent:
            given[name], sent_as[name] = sent["max_completion_tokens"], "max_completion_tokens"
        elif name in sent:
            given[name] = shown(name, sent[name]) if name in ("tools", "response_format") else sent[name]
        else:
            dropped[name] = "the chat model has no such field"
    return SentParams(sent=given, sent_as=sent_as, dropped=dropped)


def _raw_json(message: Any) -> dict[str, Any]:
    """The model's message as plain JSON; lone surrogates (not encodable as UTF-8) become U+FFFD."""
    from sysmo.llm.client import repair_surrogates

    text = json.dumps(message.model_dump(mode="json", warnings=False), default=str, ensure_ascii=False)
    return json.loads(repair_surrogates(text))


def _ls_params(chat: Any) -> dict[str, Any]:
    """LangChain's own name for the model's provider and model (``ls_provider``, ``ls_model_name``), if it says."""
    try:
        return dict(chat._get_ls_params())
    except Exception:  # a model class that cannot say without a call's arguments
        return {}


def _tokens(metadata: Any, key: str) -> Any:
    value = metadata.get(key)
    return 0 if value is None else value


def _tool_calls(message: Any) -> list[ToolCall]:
    """The message's tool calls as sent (OpenAI's raw ``arguments`` strings when the model kept them), else
    LangChain's parsed ones and the ones it could not parse."""
    raw = (getattr(message, "additional_kwargs", None) or {}).get("tool_calls")
    if raw:
        return [ToolCall.parse(c.get("id") or f"call_{i}", c["function"]["name"], c["function"].get("arguments"))
                for i, c in enumerate(raw)]
    calls = [ToolCall.parse(c.get("id") or f"call_{i}", c["name"], c.get("args") or {})
             for i, c in enumerate(getattr(message, "tool_calls", None) or [])]
    calls += [ToolCall.parse(c.get("id") or f"call_bad_{i}", c.get("name") or "", c.get("args"))
              for i, c in enumerate(getattr(message, "invalid_tool_calls", None) or [])]
    return calls
