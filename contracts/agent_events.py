"""The openhands agent's typed actions and observations (a pydantic union discriminated by ``type``), in the
contracts layer so the trace viewer (evals/) reads them without importing an agent.

Each step's model reply is an :class:`Action` (its text and tool calls); each tool's answer an
:class:`Observation`. They are validated when made and kept, as JSON, in the attempt's ``extras["events"]``;
:data:`AgentEventList` reads them back.

>>> AgentEventList.validate_python([{"type": "observation", "step": 1, "tool": "run_check", "content": "ok"}])[0].tool
'run_check'
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter


class ToolCall(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None  # the call's arguments were not valid JSON


class Action(BaseModel):
    type: Literal["action"] = "action"
    step: int
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)


class Observation(BaseModel):
    type: Literal["observation"] = "observation"
    step: int
    tool: str | None  # None: a note about the reply itself (no tool was called)
    content: str | None = None
    error: str | None = None


AgentEvent = Annotated[Action | Observation, Field(discriminator="type")]
AgentEventList: TypeAdapter[list[Action | Observation]] = TypeAdapter(list[AgentEvent])
