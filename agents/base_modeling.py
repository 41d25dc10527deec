"""base_modeling: prompt directly for the model, then repair it from the tool's diagnostics."""

from __future__ import annotations

from typing import Any

from sysmo.agents.prompts import load_prompt
from sysmo.agents.registry import register_agent
from sysmo.agents.task_prompt import task_prompt_for
from sysmo.contracts.task import TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.graphs.inline import runs_inline
from sysmo.graphs.loop import build_repair_graph
from sysmo.graphs.state import AgentState

NAME = "base_modeling"


@runs_inline
def first_request(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    system = load_prompt(NAME, "system")
    user, template = task_prompt_for(ctx, include_source=True, include_traces=False)
    ctx.prompt_hashes.update({system.key: system.sha256, template.key: template.sha256})
    messages = [{"role": "system", "content": system.text}, {"role": "user", "content": user}]
    return {"pending": messages}


@register_agent(NAME, supports=set(TaskKind), description="Direct prompting plus bounded repair from tool diagnostics.",
                prompts=(f"{NAME}/system", "common/task_<kind>"), uses=("source",), replays_outputs=True,
                plain_loop=first_request)
def build(ctx: AgentContext, checkpointer: Any = None):
    return build_repair_graph(first_request, checkpointer=checkpointer)
