"""LangChain chat models for LangGraph agents: a thin adapter over ``LLM`` (cache, retries, accounting,
offline controls), or langchain-openai's ``ChatOpenAI`` when a role says ``client: langchain-openai``.

>>> model = chat_model(llm, role="generator").bind_tools([write_file, run_check, finish])
>>> ai_message = model.invoke([SystemMessage(...), HumanMessage(...)])

The adapter is the default because every call then shares one cache key scheme, one call record and one
cost account with the rest of sysmo, and ``mockllm``/``reference`` work offline. ``ChatOpenAI`` talks to the
endpoint directly (any OpenAI-compatible server, a litellm proxy included): it is neither cached nor
recorded by sysmo, so use it only where a LangChain feature needs the real OpenAI client.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict
from sysmo.llm.client import LLM
from sysmo.llm.litellm_provider import NO_KEY
from sysmo.llm.response import CallContext, LLMResponse
from sysmo.llm.roles import ModelRoles, RoleConfig


def to_ai_message(response: LLMResponse) -> AIMessage:
    """Our answer as a LangChain ``AIMessage``: text, tool calls (malformed: invalid_tool_calls), usage."""
    good = [c for c in response.tool_calls if c.error is None]
    bad = [c for c in response.tool_calls if c.error is not None]
    return AIMessage(
        content=response.text,
        tool_calls=[{"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call"} for c in good],
        invalid_tool_calls=[
            {
                "name": c.name,
                "args": c.arguments_json,
                "id": c.id,
                "error": c.error,
                "type": "invalid_tool_call",
            }
            for c in bad
        ],
        usage_metadata={
            "input_tokens": response.usage.prompt_tokens,
            "output_tokens": response.usage.completion_tokens,
            "total_tokens": response.usage.total_tokens,
        },
        response_metadata={
            "model_name": response.model,
            "provider": response.provider,
            "is_control": response.is_control,
            "cached": response.cached,
            "cost_usd": response.cost_usd,
            "request_hash": response.request_hash,
            "finish_reason": response.finish_reason,
        },
    )


class SysmoChatModel(BaseChatModel):
    """A LangChain chat model whose every call is ``LLM.complete`` for one role (tools in OpenAI format)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: LLM
    role: str = "generator"
    sample_index: int = 0
    context: CallContext | None = None

    @property
    def _llm_type(self) -> str:
        return "sysmo-llm"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model": self.llm.config(self.role).model,
            "role": self.role,
            "sample_index": self.sample_index,
        }

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _call_args(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        extra = {k: v for k, v in kwargs.items() if k not in ("tools", "response_format")}
        if stop:
            extra["stop"] = stop
        return {
            "messages": convert_to_openai_messages(messages),
            "role": self.role,
            "sample_index": self.sample_index,
            "tools": kwargs.get("tools"),
            "response_format": kwargs.get("response_format"),
            "context": self.context,
            "extra": extra or None,
        }

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        response = self.llm.complete(**self._call_args(messages, stop, kwargs))
        return ChatResult(generations=[ChatGeneration(message=to_ai_message(response))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        response = await self.llm.acomplete(**self._call_args(messages, stop, kwargs))
        return ChatResult(generations=[ChatGeneration(message=to_ai_message(response))])


def chat_openai(config: RoleConfig) -> BaseChatModel:
    """langchain-openai's ``ChatOpenAI`` for an OpenAI-compatible endpoint (``openai/<name>``, api_base)."""
    import os

    from langchain_openai import ChatOpenAI
    from sysmo.errors import LLMError

    if config.is_control:
        raise LLMError(
            f"{config.model} is an offline control: use client: litellm (the sysmo adapter) for it"
        )
    name = config.model.split("/", 1)[1] if config.model.startswith("openai/") else config.model
    key = os.environ.get(config.api_key_env) if config.api_key_env else None
    if config.api_key_env and not key:
        raise LLMError(
            f"model {config.model!r} needs an API key: set the environment variable {config.api_key_env}"
        )
    if key is None and config.api_base:
        key = NO_KEY
    kwargs: dict[str, Any] = {
        "model": name,
        "base_url": config.api_base,
        "timeout": config.timeout_s,
        "max_retries": config.max_retries,
        "model_kwargs": dict(config.extra),
    }
    if key is not None:
        kwargs["api_key"] = key
    if config.temperature is not None:
        kwargs["temperature"] = config.temperature
    if config.max_tokens is not None:
        kwargs["max_tokens"] = config.max_tokens
    return ChatOpenAI(**kwargs)


def chat_model(
    llm: LLM | RoleConfig,
    role: str = "generator",
    *,
    sample_index: int = 0,
    context: CallContext | None = None,
) -> BaseChatModel:
    """The LangChain chat model for ``role``: ``ChatOpenAI`` if the role says ``client: langchain-openai``,
    else the ``SysmoChatModel`` adapter (cached, recorded, offline controls included). Given a bare
    ``RoleConfig``, the adapter wraps a new ``LLM`` with the default cache."""
    if isinstance(llm, RoleConfig):
        if llm.client == "langchain-openai":
            return chat_openai(llm)
        llm = LLM(
            ModelRoles(**{role: llm}) if role == "generator" else ModelRoles(generator=llm, **{role: llm})
        )
    config = llm.config(role)
    if config.client == "langchain-openai":
        return chat_openai(config)
    return SysmoChatModel(llm=llm, role=role, sample_index=sample_index, context=context)
