"""metagpt: a MetaGPT-style SOP of roles that share artifacts, with the tool check before hand-off.

Requirements Analyst -> Architect -> Modeler; the Modeler's model goes through the language tool, and only a
model that passes is handed off. When it fails, the Reviewer reads the tool result and tells the Modeler how
to fix it; the Modeler's repair request carries both the tool's diagnostics and the review. The repair loop is
the shared one, bounded by ``max_rounds``.

The roles hand each other typed documents (``agents/metagpt_documents.py``): the Analyst's
``RequirementsAnalysis``, the Architect's ``SystemDesign``, the Reviewer's ``ReviewComments``, each parsed from the
role's JSON reply (a malformed reply is shown to the role once, with the parse error, to retry). The documents
are kept in ``scratch["documents"]`` (the attempt's extras, shown by ``sysmo trace`` and the viewer); every role's
prompt and reply is an LLM-call event of the attempt.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from sysmo.agents.control_script import MAX_ROUND, default_answers, when
from sysmo.agents.metagpt_documents import (
    DOCUMENT_FOR_ROLE,
    DesignElement,
    DocumentError,
    Requirement,
    RequirementsAnalysis,
    ReviewComment,
    ReviewComments,
    SystemDesign,
    parse_document,
    schema_text,
)
from sysmo.agents.prompts import load_prompt
from sysmo.agents.registry import register_agent
from sysmo.agents.stages import model_stage, remember, with_scratch
from sysmo.agents.task_prompt import task_prompt_for
from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind
from sysmo.graphs import nodes
from sysmo.graphs.context import AgentContext
from sysmo.graphs.inline import runs_inline
from sysmo.graphs.loop import build_repair_graph
from sysmo.graphs.nodes import LANGUAGE_NAMES
from sysmo.graphs.repair import feedback_report
from sysmo.graphs.state import AgentState
from sysmo.contracts.check import CheckResult
from sysmo.llm.mockllm import MockAnswer
from sysmo.log import get_logger

log = get_logger(__name__)
DOCUMENT_TRIES = 2  # a malformed document is shown to its role once

NAME = "metagpt"
SYSTEM = "You are the {role} of a modelling team. Answer with the JSON document the next role of the team reads."
MODELER_SYSTEM = "You are the Modeler of a modelling team."
RETRY = (
    "Your reply could not be read: {error}. Answer again with only the JSON document, following this schema:\n"
    "{schema}"
)


def _language(ctx: AgentContext) -> str:
    return LANGUAGE_NAMES[ctx.task.language.value]


def _documents(state: AgentState) -> dict[str, Any]:
    return dict((state.get("scratch") or {}).get("documents") or {})


def _rendered(state: AgentState, role: str) -> str | None:
    """The role's document as the next role reads it, or None if the role produced none."""
    data = _documents(state).get(role)
    if data is None:
        return None
    return DOCUMENT_FOR_ROLE[role].model_validate(data).render()


async def _role_call(
    state: AgentState, ctx: AgentContext, role: str, prompt_name: str, purpose: str, **values: Any
) -> tuple[BaseModel | None, dict[str, Any]]:
    """One role's document: the model's JSON reply parsed into the role's pydantic model, retried once.

    Returns the document (None if the reply stayed malformed or the call failed) and the state update; a
    malformed reply is recorded in ``scratch["errors"]`` and the next role works from what it has.
    """
    kind = DOCUMENT_FOR_ROLE[prompt_name]
    prompt = load_prompt(NAME, prompt_name)
    remember(ctx, prompt)
    messages = [
        {"role": "system", "content": SYSTEM.format(role=role)},
        {"role": "user", "content": prompt.fill(language=_language(ctx), schema=schema_text(kind), **values)},
    ]
    current: AgentState = state
    update: dict[str, Any] = {}
    errors: list[str] = list((state.get("scratch") or {}).get("errors", []))
    for attempt_number in range(DOCUMENT_TRIES):
        text, update = await model_stage(current, ctx, messages, purpose=purpose)
        if text is None:
            return None, update
        try:
            document = parse_document(kind, text)
        except DocumentError as exc:
            errors.append(f"the {role}'s reply (try {attempt_number + 1}): {exc}")
            log.info("metagpt.malformed_document", attempt=ctx.attempt_id, role=role, error=str(exc))
            messages = [
                *messages,
                {"role": "assistant", "content": text},
                {"role": "user", "content": RETRY.format(error=exc, schema=schema_text(kind))},
            ]
            current = {**current, **update}  # type: ignore[typeddict-item]
            continue
        update["scratch"] = with_scratch(state, errors=errors) if errors else with_scratch(state)
        return document, update
    update["scratch"] = with_scratch(state, errors=[*errors, f"the {role} gave no readable {kind.__name__}"])
    return None, update


def _with_document(
    state: AgentState, update: dict[str, Any], role: str, document: BaseModel | None
) -> dict[str, Any]:
    scratch = update.get("scratch") or with_scratch(state)
    if document is not None:
        update["scratch"] = {**scratch, "documents": {**_documents(state), role: document.model_dump()}}
    return update


async def analyst(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    task_text, template = task_prompt_for(ctx, include_source=True, include_traces=False)
    remember(ctx, template)
    document, update = await _role_call(state, ctx, "Requirements Analyst", "analyst", "analyst", task=task_text)
    return _with_document(state, update, "analyst", document)


async def architect(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    analysis = _rendered(state, "analyst") or "(the analyst gave nothing)"
    document, update = await _role_call(state, ctx, "Architect", "architect", "architect", analysis=analysis)
    return _with_document(state, update, "architect", document)


@runs_inline
def modeler_request(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    prompt = load_prompt(NAME, "modeler")
    task_text, template = task_prompt_for(ctx, include_source=True, include_traces=False)
    remember(ctx, prompt, template)
    user = prompt.fill(
        language=_language(ctx),
        analysis=_rendered(state, "analyst") or "(none)",
        design=_rendered(state, "architect") or "(none)",
        task=task_text,
    )
    messages = [
        {"role": "system", "content": MODELER_SYSTEM},
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
    review, stage = await _role_call(
        review_state,
        ctx,
        "Reviewer",
        "reviewer",
        "review",
        report=feedback_report(artifact, check, ctx.feedback),
        model=model_text,
    )
    reviews = list(_documents(state).get("reviewer") or [])
    if review is None:  # the reviewer failed for good: the modeler still gets the tool's diagnostics
        reason = stage.get("error") or "no readable review"
        reviews.append({"round": state.get("round_index", 0), "error": reason})
        scratch = stage.get("scratch") or with_scratch(state)
        update["scratch"] = {**scratch, "documents": {**_documents(state), "reviewer": reviews}}
        if "error" not in stage:  # a malformed review costs its calls, and the loop goes on
            update.update(llm_calls=stage["llm_calls"], llm_time_s=stage["llm_time_s"])
        return update
    reviews.append({"round": state.get("round_index", 0), **review.model_dump()})
    conversation = list(update["pending"])
    feedback = conversation[-1]["content"] + "\n\nThe Reviewer's comments:\n" + review.render()
    conversation[-1] = {"role": "user", "content": feedback}
    update.update(
        pending=conversation,
        messages=conversation,
        llm_calls=stage["llm_calls"],
        llm_time_s=stage["llm_time_s"],
        scratch={
            **(stage.get("scratch") or with_scratch(state)),
            "documents": {**_documents(state), "reviewer": reviews},
        },
    )
    return update


# --- answers of the offline control script (``mockllm/control``) ------------------------------------
def control_analysis(task: Task) -> RequirementsAnalysis:
    """The Requirements Analyst's control answer: the requirement's sentences as MUST items."""
    text = task.inputs.requirement or task.inputs.description or task.title
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.strip()) > 20] or [text]
    return RequirementsAnalysis(requirements=[Requirement(id=f"R{i}", text=s) for i, s in enumerate(sentences[:25], 1)])


SYSML_DEFINITION = re.compile(
    r"^\s*(?:abstract\s+)?(part|port|item|attribute|action|state|requirement|enum|"
    r"interface|connection|occurrence|use case|constraint)\s+def\s+(\w+)",
    re.M,
)
SYSML_BEHAVIOURS = ("action", "state", "use case")


def reference_element_names(task: Task) -> list[str]:
    """The names the reference model declares: TLA+ operators, classes, architecture nodes, SysML v2
    definitions (structure first, then behaviour)."""
    text = task.references.model.main_text if task.references.model else ""
    if task.kind == TaskKind.TLA:
        return re.findall(r"^(\w+)(?:\([^)]*\))?\s*==", text, re.M)
    if task.kind == TaskKind.UML_CLASS:
        from sysmo.tools.plantuml.parse_class import parse_class_diagram

        return [c.name for c in parse_class_diagram(text).classes]
    if task.kind == TaskKind.ARCHITECTURE:
        from sysmo.tools.plantuml.architecture import parse_architecture

        return [n.name for n in parse_architecture(text).nodes]
    definitions = SYSML_DEFINITION.findall(text)
    return ([n for kind, n in definitions if kind not in SYSML_BEHAVIOURS]
            + [n for kind, n in definitions if kind in SYSML_BEHAVIOURS])


def control_design(task: Task) -> SystemDesign:
    """The Architect's control answer: the elements the reference declares."""
    names = reference_element_names(task)
    elements = [DesignElement(name=n, kind="element") for n in names] or [DesignElement(name=task.id, kind="model")]
    return SystemDesign(elements=elements)


CONTROL_REVIEW = ReviewComments(comments=[
    ReviewComment(problem="The tool's first diagnostic names the line to fix.", fix="Correct it exactly there."),
    ReviewComment(problem="The rest of the model passed.",
                  fix="Keep everything else unchanged and send the whole model again."),
])


def control_answers(task: Task) -> list[MockAnswer]:
    """The analyst's and architect's documents, a review per round, then the repair loop's answers."""
    out = [
        MockAnswer(text=control_analysis(task).model_dump_json(), when=when(task, NAME, "analyst", 0)),
        MockAnswer(text=control_design(task).model_dump_json(), when=when(task, NAME, "architect", 0)),
    ]
    out += [MockAnswer(text=CONTROL_REVIEW.model_dump_json(), when=when(task, NAME, "review", r))
            for r in range(0, MAX_ROUND + 1)]
    return out + default_answers(task, NAME)


@register_agent(
    NAME,
    supports=set(TaskKind),
    uses=("source",),
    description="MetaGPT-style SOP: analyst -> architect -> modeler hand each other typed JSON documents "
    "(RequirementsAnalysis, SystemDesign; a malformed one retried once), tool check before hand-off, the "
    "reviewer's ReviewComments in each bounded repair round.",
    prompts=(
        f"{NAME}/analyst",
        f"{NAME}/architect",
        f"{NAME}/modeler",
        f"{NAME}/reviewer",
        "common/task_<kind>",
    ),
    control_answers=control_answers,
)
def build(ctx: AgentContext, checkpointer: Any = None):
    return build_repair_graph(modeler_request,
        pre_stages=[("analyst", analyst), ("architect", architect)],
        checkpointer=checkpointer,
        repair=review_and_repair,
    )
