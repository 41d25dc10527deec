"""code_translation: SysMoBench's code translation agent and Specula's workflow for TLA+ tasks with source code:
translate the code, check the translation, abstract, restructure, then repair.

- ``translate`` (Specula step 1): the code, statement by statement, into a "translated spec": one operator per
  function, program-counter labels for each atomic step, the code's names kept. Not yet a spec TLC accepts.
- ``check_translation`` (Specula step 1.a): SANY on the translated spec (the loop's tool check; a module without
  a cfg is only parsed); its verdict is recorded and handed on, so syntax slips are fixed in the rewrite.
- ``abstract`` (Specula's draft analysis): which operators are the system's actions, which helpers to inline,
  which infrastructure (logging, metrics) to drop, the essential state variables, and where a function must
  be cut into several atomic steps; asked for as structured output (``AbstractionPlan``). A malformed plan is
  recorded and the raw reply passed on instead.
- ``first_request`` (Specula step 2, its control-flow analysis done by the model): the declarative spec from
  the translation and the plan (one assignment per variable per action, primes, ``UNCHANGED``, ``Init``,
  ``Next``, ``Spec``, a cfg), after the task's own prompt.
- the repair loop (Specula step 3): SANY and a short TLC simulation. On SysMoBench tasks each repair round is
  the task's ``agent_based.txt`` correction prompt (the harness's agent_based method), filled with the previous
  spec and cfg, the tool's errors and our diagnostics report (``task_prompt.harness_correction``).

Every stage's prompt and reply is recorded (the attempt's model-call events, ``purpose`` = the stage), and its
result is in the attempt's extras (``draft``, ``draft_check``, ``abstraction``).

Only TLA+ tasks with code are offered: a SysML v2, class or architecture task has no code to translate, and a
requirements-to-model pipeline under this name would report something other than code translation.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from sysmo.agents.control_script import default_answers, reply, when
from sysmo.agents.prompts import load_prompt
from sysmo.agents.registry import register_agent
from sysmo.agents.stages import model_stage, remember, with_scratch
from sysmo.agents.task_prompt import harness_correction, module_name, source_section, task_prompt_for
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import SysmoError
from sysmo.graphs import nodes
from sysmo.graphs.context import AgentContext
from sysmo.graphs.extract import extract_artifact
from sysmo.graphs.inline import runs_inline
from sysmo.graphs.loop import build_repair_graph
from sysmo.graphs.repair import feedback_report
from sysmo.graphs.state import AgentState
from sysmo.contracts.check import CheckResult
from sysmo.llm.mockllm import MockAnswer
from sysmo.tools.tla.source import module_name as declared_module

NAME = "code_translation"
JSON_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)(?:\n```|\Z)", re.S)
MAX_DRAFT_DIAGNOSTICS = 10
DEFINITION = re.compile(r"^([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*==", re.M)
VARIABLES = re.compile(r"^\s*VARIABLES?\s+((?:[A-Za-z_]\w*\s*,\s*)*[A-Za-z_]\w*)", re.M)
ROLES = ("action", "helper", "infrastructure")


class OperatorRole(BaseModel):
    """One operator of the translated spec and what the abstraction does with it."""

    name: str
    role: str  # action (a step of Next), helper (inlined where used), infrastructure (dropped)
    note: str = ""


class AbstractionPlan(BaseModel):
    """How the translated spec is abstracted before it is restructured (Specula's draft analysis)."""

    operators: list[OperatorRole] = Field(default_factory=list)
    state_variables: list[str] = Field(default_factory=list)
    dropped_variables: list[str] = Field(default_factory=list)
    atomic_steps: list[str] = Field(default_factory=list)  # "<operator>: where it must be cut, and why"
    notes: list[str] = Field(default_factory=list)


def parse_plan(text: str) -> tuple[AbstractionPlan | None, str | None]:
    """The plan in ``text`` (bare JSON or a ```json block), or None and why not."""
    if not text.strip():
        return None, "the reply was empty"
    body = text.strip()
    fenced = JSON_FENCE.search(body)
    if fenced:
        body = fenced.group(1)
    elif not body.startswith("{") and "{" in body:
        body = body[body.index("{"):]
    try:
        plan = AbstractionPlan.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        return None, f"not a valid abstraction plan: {first['msg']} at {'/'.join(map(str, first['loc'])) or 'top'}"
    if not any(o.role == "action" for o in plan.operators):
        return None, "the abstraction plan names no action"
    unknown = sorted({o.role for o in plan.operators} - set(ROLES))
    if unknown:
        plan.notes.append(f"roles other than {', '.join(ROLES)} were given: {', '.join(unknown)}")
    return plan, None


def plan_of_spec(text: str) -> AbstractionPlan:
    """The plan a spec itself embodies: the operators ``Next`` names are actions, the others helpers (what a
    scripted abstraction stage answers for a reference spec)."""
    definitions = DEFINITION.findall(text)
    next_body = text.split("Next ==", 1)[1].split("\n\n", 1)[0] if "Next ==" in text else ""
    called = set(re.findall(r"\b([A-Za-z_]\w*)\b", next_body))
    skip = {"Init", "Next", "Spec", "vars", "TypeOK"}
    variables = VARIABLES.search(text)
    return AbstractionPlan(
        operators=[OperatorRole(name=n, role="action" if n in called else "helper")
                   for n in dict.fromkeys(definitions) if n not in skip],
        state_variables=[v.strip() for v in variables.group(1).split(",")] if variables else [],
    )


def has_source(task: Task) -> bool:
    return task.kind == TaskKind.TLA and bool(task.inputs.source_files)


def _system_message(ctx: AgentContext, user: str, *prompts: Any) -> list[dict[str, Any]]:
    system = load_prompt(NAME, "system")
    remember(ctx, system, *prompts)
    return [{"role": "system", "content": system.text}, {"role": "user", "content": user}]


async def translate(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Stage 1: the statement-by-statement translated spec."""
    prompt = load_prompt(NAME, "translate_tla")
    task = ctx.task
    user = prompt.fill(description=task.inputs.description or task.title, source_section=source_section(task),
                       module_name=module_name(task))
    text, update = await model_stage(state, ctx, _system_message(ctx, user, prompt), purpose="translate")
    if text is None:
        return update
    found = extract_artifact(text, task.language, task.inputs.module_name)
    draft = found.artifact.main_text if found.artifact else text
    update["scratch"] = with_scratch(state, stage1="translate", draft=draft, draft_error=found.error)
    return update


def check_translation(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Stage 1.a: SANY on the translated spec (no cfg: parsed only); the verdict goes to the next stages."""
    scratch = state.get("scratch") or {}
    draft = (scratch.get("draft") or "").strip()
    name = f"{declared_module(draft) or module_name(ctx.task)}.tla"
    try:
        result = ctx.checker(Artifact(language=Language.TLA, files={name: draft + "\n"}), ctx.task)
    except SysmoError as exc:
        return {"scratch": with_scratch(state, draft_check={"outcome": "error", "diagnostics": [str(exc)]})}
    verdict = {"tool": result.tool, "outcome": result.outcome.value,
               "diagnostics": [d.render() for d in result.diagnostics[:MAX_DRAFT_DIAGNOSTICS]]}
    return {"scratch": with_scratch(state, draft_check=verdict)}


def draft_check_text(scratch: dict[str, Any]) -> str:
    verdict = scratch.get("draft_check") or {}
    if not verdict:
        return "(not checked)"
    tool = "SANY" if str(verdict.get("tool", "sany")).startswith("sany") else verdict["tool"]
    if verdict.get("outcome") == "ok":
        return f"{tool} parses the translated spec."
    lines = [f"{tool} rejects the translated spec ({verdict.get('outcome')}):"]
    return "\n".join(lines + [f"- {d}" for d in verdict.get("diagnostics") or []])


async def abstract(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Stage 2: the abstraction plan, as structured output."""
    prompt = load_prompt(NAME, "abstract_tla")
    scratch = state.get("scratch") or {}
    user = prompt.fill(draft=(scratch.get("draft") or "").strip(), draft_check=draft_check_text(scratch),
                       description=ctx.task.inputs.description or ctx.task.title)
    text, update = await model_stage(state, ctx, _system_message(ctx, user, prompt), purpose="abstract",
                                     response_format=AbstractionPlan)
    if text is None:
        return update
    plan, error = parse_plan(text)
    update["scratch"] = with_scratch(state, abstraction=plan.model_dump() if plan else None,
                                     abstraction_error=error, abstraction_raw=None if plan else text)
    return update


def plan_text(scratch: dict[str, Any]) -> str:
    if scratch.get("abstraction") is not None:
        return json.dumps(scratch["abstraction"], indent=1)
    return (scratch.get("abstraction_raw") or "").strip() or "(the abstraction stage gave nothing usable)"


@runs_inline
def first_request(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Stage 3: restructure the translation into a declarative spec, following the plan."""
    task_text, template = task_prompt_for(ctx, include_source=True, include_traces=False)
    scratch = state.get("scratch") or {}
    prompt = load_prompt(NAME, "restructure_tla")
    user = task_text + "\n" + prompt.fill(draft=(scratch.get("draft") or "").strip(),
                                           draft_check=draft_check_text(scratch), plan=plan_text(scratch))
    return {"pending": _system_message(ctx, user, template, prompt)}


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


def control_answers(task: Task) -> list[MockAnswer]:
    """``mockllm/control``: the reference as the draft, its plan as the abstraction, then the repair loop's."""
    reference = task.references.model
    assert reference is not None
    draft = reply(Artifact(language=Language.TLA, files={reference.main_file: reference.main_text}),
                  "Statement-by-statement draft:")
    return [
        MockAnswer(text=draft, when=when(task, NAME, "translate", 0)),
        MockAnswer(text=plan_of_spec(reference.main_text).model_dump_json(), when=when(task, NAME, "abstract", 0)),
        *default_answers(task, NAME),
    ]


@register_agent(
    NAME,
    supports={TaskKind.TLA},
    needs=("source",),
    description="SysMoBench's code translation agent, Specula-style: translate the code statement by statement, "
    "check the translation with SANY, abstract (actions, helpers, state), restructure into a declarative spec, "
    "then repair from SANY/TLC. TLA+ tasks with code only.",
    prompts=(f"{NAME}/system", f"{NAME}/translate_tla", f"{NAME}/abstract_tla", f"{NAME}/restructure_tla",
             "common/task_tla"),
    control_answers=control_answers,
)
def build(ctx: AgentContext, checkpointer: Any = None):
    stages = [("translate", translate), ("check_translation", check_translation), ("abstract", abstract)]
    return build_repair_graph(first_request, pre_stages=stages, checkpointer=checkpointer, repair=repair)
