"""One model call as data (``LLMRequest``) and the shape every provider has (``Provider``)."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, Field
from sysmo.llm.cache import request_key
from sysmo.llm.response import CallContext, LLMResponse


class LLMRequest(BaseModel):
    """Messages are OpenAI-format dicts (``role``, ``content``, ``tool_calls``, ``tool_call_id``)."""

    model: str
    role: str = "generator"
    messages: list[dict[str, Any]]
    temperature: float | None = None
    max_tokens: int | None = None
    tools: list[dict[str, Any]] | None = None  # OpenAI tools format
    response_format: dict[str, Any] | None = None
    sample_index: int = 0
    api_base: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    context: CallContext | None = None

    def params(self) -> dict[str, Any]:
        """The parameters that change the answer (what the cache key and the record keep)."""
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "tools": self.tools,
            "response_format": self.response_format,
        }
        params.update(self.extra)
        return {k: v for k, v in params.items() if v is not None}

    def position(self) -> dict[str, Any] | None:
        """The call's place in its attempt (round, role, call index), part of the cache key; None when the caller
        gave none (a call outside an agent's rounds)."""
        context = self.context
        if context is None or context.call_index is None:
            return None
        return {"round": context.round, "role": self.role, "call": context.call_index}

    def key(self, *, positioned: bool = True) -> str:
        """The cache key (``cache.request_key``); ``positioned=False``: without the call's place in its attempt,
        as requests were keyed before it was part of the key."""
        return request_key(
            model=self.model,
            api_base=self.api_base,
            messages=self.messages,
            params=self.params(),
            sample_index=self.sample_index,
            position=self.position() if positioned else None,
        )

    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, list):  # content parts
                    return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
                return str(content or "")
        return ""


class Provider(Protocol):
    """Answers one request with one attempt (retries, cache and limits are the client's job)."""

    name: str
    is_control: bool  # offline controls (mockllm, reference) are never cached nor retried

    def complete(self, request: LLMRequest) -> LLMResponse: ...

    async def acomplete(self, request: LLMRequest) -> LLMResponse: ...
