"""The one state schema every agent graph uses. Values are JSON-able so every checkpoint can be stored and read."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


class AgentState(TypedDict, total=False):
    """LangGraph state of one attempt. Nodes return only the keys they change.

    ``rounds`` accumulates ``Round`` dicts (reducer: append). In the repair loop ``pending`` is the running
    conversation; ``messages`` is the tool-calling agent's (openhands) transcript.
    """

    task_id: str
    round_index: int  # index of the round being built (0 = first generation)
    max_rounds: int  # repair rounds allowed after the first generation
    messages: list[dict[str, Any]]  # tool-calling transcript (role/content/tool_calls), openhands only
    pending: list[dict[str, Any]]  # the request of the round being built
    response: str  # raw reply of the round being built
    llm_calls: list[dict[str, Any]]  # calls made for the round being built
    artifact: dict[str, Any] | None  # Artifact dump of the round being built
    extraction_error: str | None
    extraction_notes: list[str]
    check: dict[str, Any] | None  # CheckResult dump
    round_started: float
    tool_time_s: float
    llm_time_s: float
    rounds: Annotated[list[dict[str, Any]], operator.add]
    status: str  # running | passed | failed | error
    error: str | None
    scratch: dict[str, Any]  # agent-specific intermediate results (typed model, role outputs, draft)
    steps: int  # tool-calling steps used (openhands-style agent)
