"""The LLM layer: one interface (``LLM.complete`` / ``acomplete``) for every model call, over litellm.

>>> from sysmo.llm import LLM, ModelRoles
>>> llm = LLM(ModelRoles(generator="openai/gpt-4o-mini", judge="anthropic/claude-3-5-haiku-20241022"))
>>> llm.complete([{"role": "user", "content": "..."}], role="generator", sample_index=0).text

Models: any litellm provider string (``openai/...``, ``anthropic/...``, ``ollama/...``), ``openai/<name>``
with ``api_base`` for an OpenAI-compatible server (vLLM, Ollama, llama.cpp, a litellm proxy), and two
offline controls, ``mockllm/<script>`` (see ``sysmo.llm.mockllm``) and ``reference`` (see
``sysmo.llm.reference``), labelled ``is_control`` in every response and record. Responses are cached in
SQLite by model, server, messages, parameters and sample index. LangGraph nodes call ``LLM`` directly
(tool calling included: ``tools=`` and ``LLMResponse.tool_calls``). A LangChain chat model can be the model
instead of litellm: ``langchain:openai/<model>`` (``ChatOpenAI``) or ``langchain:<module>:<factory>`` (see
``sysmo.llm.langchain_provider``), invoked inside the graph's run so LangChain tracers see each call.
litellm is imported when a hosted model is first called, never by ``import sysmo.llm``.
"""

from __future__ import annotations

import os

# litellm fetches its price map over the network at import unless told otherwise
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from sysmo.llm.cache import ResponseCache, request_key  # noqa: E402
from sysmo.llm.client import LLM, RoleSpend, default_cache_path  # noqa: E402
from sysmo.llm.limits import ConcurrencyLimits  # noqa: E402
from sysmo.llm.mockllm import MockAnswer, MockCondition, MockScript  # noqa: E402
from sysmo.llm.reference import ReferenceProvider, format_reference  # noqa: E402
from sysmo.llm.request import LLMRequest, Provider  # noqa: E402
from sysmo.llm.response import CallContext, LLMCallRecord, LLMResponse, ToolCall, Usage  # noqa: E402
from sysmo.llm.retry import LLMCallError  # noqa: E402
from sysmo.llm.roles import ROLES, ModelRoles, Role, RoleConfig  # noqa: E402

__all__ = [
    "LLM",
    "LLMCallError",
    "LLMCallRecord",
    "LLMRequest",
    "LLMResponse",
    "CallContext",
    "ConcurrencyLimits",
    "MockAnswer",
    "MockCondition",
    "MockScript",
    "ModelRoles",
    "Provider",
    "ROLES",
    "ReferenceProvider",
    "ResponseCache",
    "Role",
    "RoleConfig",
    "RoleSpend",
    "ToolCall",
    "Usage",
    "default_cache_path",
    "format_reference",
    "request_key",
]
