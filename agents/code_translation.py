"""code_translation: translate the input step by step, then write the model from the translation, then repair.

- SysMoBench tasks: the first request is the task's ``direct_call`` prompt (as the harness's agent_based method
  generates), and each repair round the task's ``agent_based.txt`` correction prompt, filled with the previous
  spec and cfg, the tool's errors and our diagnostics report (``task_prompt.harness_correction``).
- Source code (TLA+ tasks with ``inputs.source_files``), Specula-style: stage 1 translates the code statement
  by statement into a TLA+ draft; stage 2 (the loop's first request) restructures the draft into a
  declarative spec with Init/Next/actions.
- Text (SysML v2, class and architecture diagrams): stage 1 extracts a typed intermediate model
  (``IntermediateModel``, asked for as structured output); stage 2 synthesises the target language from it.
  A malformed intermediate model is recorded and the raw reply is passed on instead.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from sysmo.agents.prompts import load_prompt
from sysmo.agents.registry import register_agent
from sysmo.agents.stages import model_stage, remember, with_scratch
from sysmo.agents.task_prompt import harness_correction, module_name, source_section, task_prompt_for
from sysmo.artifact import Artifact
from sysmo.benchmarks.task import TaskKind
from sysmo.graphs import nodes
from sysmo.graphs.context import AgentContext
from sysmo.graphs.extract import extract_artifact
from sysmo.graphs.inline import runs_inline
from sysmo.graphs.loop import build_repair_graph
from sysmo.graphs.nodes import LANGUAGE_NAMES
from sysmo.graphs.repair import feedback_report
from sysmo.graphs.state import AgentState
from sysmo.tools.result import CheckResult

NAME = "code_translation"
JSON_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)(?:\n```|\Z)", re.S)


class TypedName(BaseModel):
    name: str
    type: str = ""


class Operation(BaseModel):
    name: str
    parameters: list[TypedName] = Field(default_factory=list)
    returns: str = ""


class Entity(BaseModel):
    name: str
    kind: str = ""  # class, interface, enum, part, component, actor, ...
    attributes: list[TypedName] = Field(default_factory=list)
    operations: list[Operation] = Field(default_factory=list)


class Relation(BaseModel):
    kind: str  # association, composition, generalization, connection, flow, ...
    source: str
    target: str
    label: str = ""
    multiplicity: str = ""


class Behaviour(BaseModel):
    name: str
    kind: str = ""  # action, state machine, use case, process
    owner: str = ""
    steps: list[str] = Field(default_factory=list)


class IntermediateModel(BaseModel):
    """The typed model extracted from requirement text before any target-language syntax is written."""

    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    behaviours: list[Behaviour] = Field(default_factory=list)


def parse_intermediate(text: str) -> tuple[IntermediateModel | None, str | None]:
    """The intermediate model in ``text`` (bare JSON or a ```json block), or None and why not."""
    if not text.strip():
        return None, "the reply was empty"
    body = text.strip()
    fenced = JSON_FENCE.search(body)
    if fenced:
        body = fenced.group(1)
    elif not body.startswith("{") and "{" in body:
        body = body[body.index("{") :]
    try:
        model = IntermediateModel.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        return (
            None,
            f"not a valid intermediate model: {first['msg']} at {'/'.join(map(str, first['loc'])) or 'top'}",
        )
    if not model.entities:
        return None, "the intermediate model has no entities"
    return model, None


def has_source(ctx: AgentContext) -> bool:
    return ctx.task.kind == TaskKind.TLA and bool(ctx.task.inputs.source_files)


async def translate(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Stage 1 for code: the statement-by-statement TLA+ draft."""
    system, prompt = load_prompt(NAME, "system"), load_prompt(NAME, "translate_tla")
    remember(ctx, system, prompt)
    task = ctx.task
    user = prompt.fill(
        description=task.inputs.description or task.title,
        source_section=source_section(task),
        module_name=module_name(task),
    )
    text, update = await model_stage(
        state,
        ctx,
        [{"role": "system", "content": system.text}, {"role": "user", "content": user}],
        purpose="translate",
    )
    if text is None:
        return update
    found = extract_artifact(text, task.language, task.inputs.module_name)
    draft = found.artifact.main_text if found.artifact else text
    update["scratch"] = with_scratch(state, stage1="translate", draft=draft, draft_error=found.error)
    return update


async def extract_model(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Stage 1 for text: the typed intermediate model, as structured output."""
    system, prompt = load_prompt(NAME, "system"), load_prompt(NAME, "extract_model")
    remember(ctx, system, prompt)
    task = ctx.task
    user = prompt.fill(
        requirement=task.inputs.requirement or task.inputs.description or "",
        language=LANGUAGE_NAMES[task.language.value],
    )
    text, update = await model_stage(
        state,
        ctx,
        [{"role": "system", "content": system.text}, {"role": "user", "content": user}],
        purpose="extract_model",
        response_format=IntermediateModel,
    )
    if text is None:
        return update
    model, error = parse_intermediate(text)
    update["scratch"] = with_scratch(
        state,
        stage1="extract_model",
        intermediate_model=model.model_dump() if model else None,
        intermediate_error=error,
        intermediate_raw=None if model else text,
    )
    return update


@runs_inline
def first_request(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    system = load_prompt(NAME, "system")
    task_text, template = task_prompt_for(ctx, include_source=True, include_traces=False)
    scratch = state.get("scratch") or {}
    if ctx.task.kind == TaskKind.TLA:
        prompt = load_prompt(NAME, "restructure_tla")
        user = task_text + "\n" + prompt.fill(draft=(scratch.get("draft") or "").strip())
    else:
        prompt = load_prompt(NAME, "synthesize")
        if scratch.get("intermediate_model") is not None:
            intermediate = json.dumps(scratch["intermediate_model"], indent=1)
        else:  # the extraction was malformed: the raw reply still carries what the model understood
            intermediate = (scratch.get("intermediate_raw") or "").strip() or "(stage 1 gave nothing usable)"
        user = prompt.fill(
            language=LANGUAGE_NAMES[ctx.task.language.value], intermediate=intermediate, task=task_text
        )
    remember(ctx, system, template, prompt)
    messages = [{"role": "system", "content": system.text}, {"role": "user", "content": user}]
    return {"pending": messages}


@runs_inline
def repair(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """The shared repair; on a task that ships its own correction prompt (SysMoBench ``agent_based.txt``, the
    harness's agent_based method), that prompt carries the round's diagnostics instead of ours alone."""
    update = nodes.repair(state, ctx)
    artifact = Artifact.model_validate(state["artifact"]) if state.get("artifact") else None
    check = CheckResult.model_validate(state["check"]) if state.get("check") else None
    if artifact is None or check is None:
        return update
    errors = [d.render() for d in check.diagnostics]
    syntax = [d.render() for d in check.diagnostics if check.tool.startswith("sany")]
    semantic = [e for e in errors if e not in syntax]
    main_cfg = next((t for n, t in artifact.files.items() if n.endswith(".cfg")), "")
    corrected = harness_correction(
        ctx.task, spec=artifact.main_text, cfg=main_cfg, errors=errors, syntax=syntax, semantic=semantic,
        output=feedback_report(artifact, check, ctx.feedback), attempt=update["round_index"], max_attempts=ctx.max_rounds - 1,
    )
    if corrected is not None:
        update["pending"][-1] = {"role": "user", "content": corrected}
    return update


@register_agent(
    NAME,
    supports=set(TaskKind),
    needs=("source",),
    description="Translate first (code statement by statement, or text into a typed intermediate "
    "model), then write the model from the translation; bounded repair.",
    prompts=(
        f"{NAME}/system",
        f"{NAME}/translate_tla",
        f"{NAME}/restructure_tla",
        f"{NAME}/extract_model",
        f"{NAME}/synthesize",
        "common/task_<kind>",
    ),
    variant=lambda ctx: "translate" if has_source(ctx) else "extract_model",
)
def build(ctx: AgentContext, checkpointer: Any = None):
    stage = ("translate", translate) if has_source(ctx) else ("extract_model", extract_model)
    return build_repair_graph(first_request, pre_stages=[stage], checkpointer=checkpointer, repair=repair)
