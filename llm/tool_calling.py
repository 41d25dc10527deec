"""How a tool-calling agent's calls travel to a model: natively (the provider's ``tools=``, answered with
``tool_calls``) or as text (a fenced JSON block in the reply, ``agents/text_tools.py``).

The role's ``tool_calling`` option decides when set to ``native`` or ``text``. Under ``auto`` (the default) a model
litellm's model map knows and marks without function calling gets the text protocol from its first request; any
other model starts native, and the agent switches to text if its first reply carries no tool call (``fallback``).
Offline controls (``mockllm/...``, ``reference``) and replays answer native tool calls: native, no fallback.

>>> start_mode(RoleConfig(model="openai/gpt-3.5-turbo-16k")).mode
'text'
"""

from __future__ import annotations

import functools
from typing import Literal

from pydantic import BaseModel

from sysmo.llm.roles import RoleConfig, is_offline_model

ToolMode = Literal["native", "text"]


class ToolModeStart(BaseModel):
    """The mode an attempt starts in, whether a first reply without a tool call switches it to text, and why."""

    mode: ToolMode
    fallback: bool
    reason: str


def litellm_name(model: str) -> str | None:
    """The litellm name of a configured model (``langchain:openai/<m>`` is ``openai/<m>``); None for a LangChain
    factory (``langchain:<module>:<factory>``), which litellm's map cannot know."""
    name = model.removeprefix("langchain:")
    return None if ":" in name else name


@functools.lru_cache(maxsize=256)
def litellm_function_calling(name: str) -> bool | None:
    """litellm's ``supports_function_calling(name)`` for a model its map knows; None for one it does not (its
    False then says nothing: a self-served ``openai/<anything>`` is unknown)."""
    from sysmo.llm.litellm_provider import import_litellm

    litellm = import_litellm()
    try:
        litellm.get_model_info(name)
    except Exception:  # litellm raises several types for a model it has no entry for
        return None
    return bool(litellm.supports_function_calling(name))


def start_mode(config: RoleConfig) -> ToolModeStart:
    """The tool-calling mode of a role's first request (see the module's text)."""
    if config.tool_calling != "auto":
        return ToolModeStart(mode=config.tool_calling, fallback=False,
                             reason=f"role option tool_calling: {config.tool_calling}")
    if is_offline_model(config.model):
        return ToolModeStart(mode="native", fallback=False, reason="offline control or replay: native tool calls")
    name = litellm_name(config.model)
    supported = litellm_function_calling(name) if name is not None else None
    if supported is False:
        return ToolModeStart(mode="text", fallback=False,
                             reason=f"litellm's model map: {name} has no native function calling")
    known = (f"litellm's model map: {name} has native function calling" if supported
             else f"{name or config.model} is not in litellm's model map")
    return ToolModeStart(mode="native", fallback=True,
                         reason=f"{known}; the text protocol if the first reply carries no tool call")
