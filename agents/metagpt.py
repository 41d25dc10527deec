"""metagpt: a MetaGPT-style SOP of roles that share artifacts, with the tool check before hand-off.

Requirements Analyst -> Architect -> Modeler; the Modeler's model goes through the language tool, and only a
model that passes is handed off. When it fails, the Reviewer reads the tool result and tells the Modeler how
to fix it; the Modeler's repair request carries both the tool's diagnostics and the review. The repair loop is
the shared one, bounded by ``max_rounds``. Every role's output is kept in ``scratch["roles"]``.
"""

from __future__ import annotations

from typing import Any

from sysmo.agents.prompts import load_prompt
from sysmo.agents.registry import register_agent
from sysmo.agents.stages import model_stage, remember, with_scratch
from sysmo.agents.task_prompt import task_prompt_for
from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import TaskKind
from sysmo.graphs import nodes
from sysmo.graphs.context import AgentContext
from sysmo.graphs.inline import runs_inline
from sysmo.graphs.loop import build_repair_graph
from sysmo.graphs.nodes import LANGUAGE_NAMES
from sysmo.graphs.repair import feedback_report
from sysmo.graphs.state import AgentState
from sysmo.contracts.check import CheckResult

NAME = "metagpt"
SYSTEM = "You are the {role} of a modelling team. Answer in plain text for the next role of the team."


def _language(ctx: AgentContext) -> str:
    return LANGUAGE_NAMES[ctx.task.language.value]


def _roles(state: AgentState) -> dict[str, Any]:
    return dict((state.get("scratch") or {}).get("roles") or {})


async def _role_call(
    state: AgentState, ctx: AgentContext, role: str, prompt_name: str, purpose: str, **values: Any
) -> tuple[str | None, dict[str, Any]]:
    prompt = load_prompt(NAME, prompt_name)
    remember(ctx, prompt)
    messages = [
        {"role": "system", "content": SYSTEM.format(role=role)},
        {"role": "user", "content": prompt.fill(language=_language(ctx), **values)},
    ]
    text, update = await model_stage(state, ctx, messages, purpose=purpose)
    if text is not None and not text.strip():
        # an empty hand-off is recorded, and the next role works from what it has
        update["scratch"] = with_scratch(
            state,
            roles=_roles(state),
            errors=[*(state.get("scratch") or {}).get("errors", []), f"the {role} gave an empty answer"],
        )
    return text, update


async def analyst(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    task_text, template = task_prompt_for(ctx, include_source=True, include_traces=False)
    remember(ctx, template)
    text, update = await _role_call(state, ctx, "Requirements Analyst", "analyst", "analyst", task=task_text)
    if text is not None:
        scratch = update.get("scratch") or with_scratch(state)
        update["scratch"] = {**scratch, "roles": {**_roles(state), "analyst": text}}
    return update


async def architect(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    analysis = _roles(state).get("analyst") or "(the analyst gave nothing)"
    text, update = await _role_call(state, ctx, "Architect", "architect", "architect", analysis=analysis)
    if text is not None:
        scratch = update.get("scratch") or with_scratch(state)
        update["scratch"] = {**scratch, "roles": {**_roles(state), "architect": text}}
    return update


@runs_inline
def modeler_request(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    roles = _roles(state)
    prompt = load_prompt(NAME, "modeler")
    task_text, template = task_prompt_for(ctx, include_source=True, include_traces=False)
    remember(ctx, prompt, template)
    user = prompt.fill(
        language=_language(ctx),
        analysis=(roles.get("analyst") or "(none)").strip(),
        design=(roles.get("architect") or "(none)").strip(),
        task=task_text,
    )
    messages = [
        {"role": "system", "content": SYSTEM.format(role="Modeler")},
        {"role": "user", "content": user},
    ]
    return {"pending": messages}


async def review_and_repair(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """The Reviewer reads the failed check; the Modeler's next request carries diagnostics and review."""
    update = nodes.repair(state, ctx)
    check = CheckResult.model_validate(state["check"]) if state.get("check") else None
    if (
        check is None
    ):  # nothing was checked (no usable model in the reply): the extraction error is the feedback
        return update
    artifact = Artifact.model_validate(state["artifact"]) if state.get("artifact") else None
    model_text = "\n\n".join(
        f"// {name}\n{text}" for name, text in (artifact.files if artifact else {}).items()
    )
    review_state = {**state, "llm_calls": [], "llm_time_s": 0.0}  # the review belongs to the next round
    text, stage = await _role_call(
        review_state,
        ctx,
        "Reviewer",
        "reviewer",
        "review",
        report=feedback_report(artifact, check, ctx.feedback),
        model=model_text,
    )
    if text is None:  # the reviewer's provider failed for good: the modeler still gets the tool's diagnostics
        reviews = [
            *(_roles(state).get("reviewer") or []),
            {"round": state.get("round_index", 0), "error": stage["error"]},
        ]
        update["scratch"] = with_scratch(state, roles={**_roles(state), "reviewer": reviews})
        return update
    reviews = [*(_roles(state).get("reviewer") or []), {"round": state.get("round_index", 0), "review": text}]
    conversation = list(update["pending"])
    feedback = conversation[-1]["content"]
    if text.strip():
        feedback += "\n\nThe Reviewer's notes:\n" + text.strip()
    conversation[-1] = {"role": "user", "content": feedback}
    update.update(
        pending=conversation,
        messages=conversation,
        llm_calls=stage["llm_calls"],
        llm_time_s=stage["llm_time_s"],
        scratch={
            **(stage.get("scratch") or with_scratch(state)),
            "roles": {**_roles(state), "reviewer": reviews},
        },
    )
    return update


@register_agent(
    NAME,
    supports=set(TaskKind),
    uses=("source",),
    description="MetaGPT-style SOP: analyst -> architect -> modeler, tool check before hand-off, "
    "reviewer feedback in each bounded repair round.",
    prompts=(
        f"{NAME}/analyst",
        f"{NAME}/architect",
        f"{NAME}/modeler",
        f"{NAME}/reviewer",
        "common/task_<kind>",
    ),
)
def build(ctx: AgentContext, checkpointer: Any = None):
    return build_repair_graph(modeler_request,
        pre_stages=[("analyst", analyst), ("architect", architect)],
        checkpointer=checkpointer,
        repair=review_and_repair,
    )
