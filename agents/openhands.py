"""openhands: an OpenHands-style tool-calling agent that writes the model into a workspace and checks it.

Tools (OpenAI tools format, through ``sysmo.llm`` so any OpenAI-compatible endpoint works): ``write_file``,
``read_file`` and ``edit_file`` (replace one occurrence of a text; an absent or repeated old text changes
nothing and says so) on the attempt's workspace, a directory on disk (``agents/workspace.py``: every path the
model gives is confined to it); ``list_source`` / ``view_source`` (a line range) / ``search_source`` over the
system's source files (not pasted into the prompt: a big system is read piece by piece); ``run_check`` (the
real language tool, in its sandbox, on the files read back from the workspace; its diagnostics are the
observation) and ``finish`` (hand-off; refused while the check fails and budget remains). Every action and
observation is a typed event (``contracts/agent_events.py``: ``Action`` / ``Observation``) in
``scratch["events"]``. A round is one check of the workspace, so the budget matches the other agents: at most
``max_rounds + 1`` checks, and ``max_steps`` model calls (default ``(max_rounds + 1) * 3``); when the steps
are used up the workspace is handed over as it is (checked if it changed). The workspace at the last check is
the attempt's final artifact; under the runner its directory stays at ``<experiment>/artifacts/<attempt>/
workspace/``. Everything is bounded: a reply by ``max_reply_chars`` (tool-call arguments included), a workspace
file and the workspace (``agents/workspace.py``), a tool answer by ``MAX_OBSERVATION_CHARS``, the conversation sent
back by ``agents/history.py``, a source search by RE2's linear time and its own deadline.

Tool calls travel natively (``tools=``, answered with ``tool_calls``) or, for a model without native tool calling,
by the text protocol of ``agents/text_tools.py`` (fenced ``tool`` JSON blocks in the reply, the results fed back
as one user message). ``llm/tool_calling.py`` picks the first request's mode from the role's ``tool_calling``
option and litellm's model map; under ``auto`` a first reply without a tool call switches to text. The mode is
the attempt's ``extras["tool_mode"]`` (with ``tool_mode_reason`` and the replies per mode); a model that never
calls a tool ends with a reason that says so.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph
from sysmo.agents.control_script import MAX_ROUND, broken_artifact, when
from sysmo.contracts.agent_events import Action, Observation
from sysmo.agents.prompts import load_prompt
from sysmo.agents.history import bounded_history
from sysmo.agents.registry import register_agent
from sysmo.agents.source_tools import list_sources, search_sources, view_source
from sysmo.agents.stages import remember, with_scratch
from sysmo.agents.task_prompt import module_name, task_prompt_for
from sysmo.agents.text_tools import parse_tool_blocks, results_message, tools_text
from sysmo.agents.workspace import Workspace, WorkspaceError
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import SysmoError
from sysmo.graphs import nodes
from sysmo.contracts.attempt import LLMCallSummary, Round
from sysmo.graphs.context import AgentContext, attempt_over
from sysmo.graphs.inline import runs_inline
from sysmo.graphs.loop import Edges, add_node
from sysmo.graphs.repair import feedback_report
from sysmo.graphs.state import AgentState
from sysmo.llm.mockllm import MockAnswer
from sysmo.llm.response import ToolCall
from sysmo.llm.tool_calling import ToolModeStart, start_mode
from sysmo.log import get_logger
from sysmo.contracts.check import CheckResult, Outcome

log = get_logger(__name__)

NAME = "openhands"
STEPS_PER_ROUND = 3
MAX_OBSERVATION_CHARS = 100_000  # one tool answer sent back to the model
SUFFIXES = {
    Language.TLA: (".tla", ".cfg"),
    Language.SYSML: (".sysml",),
    Language.PLANTUML: (".puml", ".plantuml", ".wsd", ".txt"),
}
TOOL_NAMES = {
    Language.TLA: "SANY, then a short TLC simulation",
    Language.SYSML: "the OpenSysML validator",
    Language.PLANTUML: "PlantUML",
}


def _function(name: str, description: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties or {},
                "required": list(properties or {}),
            },
        },
    }


TOOLS = [
    _function(
        "write_file",
        "Create or overwrite a file in the workspace with the complete content.",
        {
            "path": {"type": "string", "description": "file name, e.g. Spec.tla"},
            "content": {"type": "string", "description": "the whole file"},
        },
    ),
    _function("read_file", "Read a file of the workspace.", {"path": {"type": "string"}}),
    _function(
        "edit_file",
        "Replace one occurrence of old_text by new_text in a workspace file (old_text must occur exactly once; "
        "copy it exactly, whitespace included).",
        {
            "path": {"type": "string", "description": "file name, e.g. Spec.tla"},
            "old_text": {"type": "string", "description": "the exact text to replace"},
            "new_text": {"type": "string", "description": "its replacement (empty: delete it)"},
        },
    ),
    _function("list_source", "List the system's source files with their line counts."),
    _function(
        "view_source",
        "Show numbered lines of one source file (at most 200 per call).",
        {"path": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}},
    ),
    _function("search_source", "Find the lines of the source files that match a regular expression.",
              {"pattern": {"type": "string"}}),
    _function("run_check", "Run the language tool on the workspace files and return its diagnostics."),
    _function("finish", "Hand the workspace over; accepted once the check passes."),
]


def max_steps(ctx: AgentContext) -> int:
    return ctx.max_steps if ctx.max_steps is not None else (ctx.max_rounds + 1) * STEPS_PER_ROUND


def max_checks(ctx: AgentContext) -> int:
    return ctx.max_rounds + 1


def main_files(ctx: AgentContext) -> list[str]:
    language = ctx.task.language
    if language == Language.TLA:
        name = module_name(ctx.task)
        return [f"{name}.tla", f"{name}.cfg"]
    return ["model.sysml" if language == Language.SYSML else "diagram.puml"]


def workspace_artifact(ctx: AgentContext, workspace: dict[str, str], order: list[str] | None = None) -> Artifact | None:
    """The model files of the workspace (all files if none has the language's suffix); ``order``: the names in
    the order of their last write (a PlantUML task's diagram is the file written last)."""
    if not workspace:
        return None
    suffixes = SUFFIXES[ctx.task.language]
    files = {n: t for n, t in workspace.items() if n.lower().endswith(suffixes)} or dict(workspace)
    if ctx.task.language == Language.PLANTUML:  # one diagram
        written = [n for n in order or [] if n in files]
        last = written[-1] if written else sorted(files)[-1]
        files = {last: files[last]}
    return Artifact(language=ctx.task.language, files=files)


def workspace_of(ctx: AgentContext, scratch: dict[str, Any]) -> Workspace:
    """The attempt's workspace directory (``ctx.workspace_dir``; a private temporary one for a graph run
    without it, e.g. forked from a checkpoint by hand, named in ``scratch`` so every step finds it)."""
    if ctx.workspace_dir is not None:
        return Workspace(ctx.workspace_dir)
    if not scratch.get("workspace_dir"):
        scratch["workspace_dir"] = tempfile.mkdtemp(prefix="sysmo-workspace-")
    return Workspace(Path(scratch["workspace_dir"]))


@runs_inline
def setup(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    system, task_template = load_prompt(NAME, "system"), load_prompt(NAME, "task")
    start = tool_mode_start(ctx)
    # the source is read through list_source / view_source / search_source, never pasted into the prompt
    task_text, template = task_prompt_for(ctx, include_source=False, include_traces=False)
    remember(ctx, system, task_template, template)
    if ctx.task.inputs.source_files:
        task_text += ("\n\nThe system's source code is available through the tools list_source, view_source "
                      "and search_source:\n" + list_sources(ctx.task.inputs.source_files))
    files = main_files(ctx)
    extra = f" and its TLC configuration to `{files[1]}`" if len(files) > 1 else ""
    system_text = system.fill(
        tool_name=TOOL_NAMES[ctx.task.language], max_steps=max_steps(ctx), max_checks=max_checks(ctx)
    )
    if start.mode == "text":
        system_text += "\n\n" + text_protocol(ctx)
    messages = [
        {"role": "system", "content": system_text},
        {
            "role": "user",
            "content": task_template.fill(task=task_text, main_file=files[0], extra_files=extra),
        },
    ]
    scratch = with_scratch(state, workspace={}, events=[], checks=0, checked_sha=None, last_ok=None, calls=[],
                           tool_mode=start.mode, tool_mode_reason=start.reason, tool_mode_fallback=start.fallback,
                           tool_mode_replies={"native": 0, "text": 0}, replies_with_tool_calls=0)
    workspace_of(ctx, scratch).reset()  # an empty directory (what an earlier run of this attempt left goes)
    return {"messages": messages, "pending": messages, "steps": 0, "scratch": scratch}


def tool_mode_start(ctx: AgentContext) -> ToolModeStart:
    """The attempt's first tool-calling mode, from its generator's role config (``llm/tool_calling.py``)."""
    config = getattr(ctx.llm, "config", None)  # a client without role configs: native, text if that fails
    if not callable(config):
        return ToolModeStart(mode="native", fallback=True, reason="the model client has no role config; the text "
                             "protocol if the first reply carries no tool call")
    return start_mode(config("generator"))


def text_protocol(ctx: AgentContext) -> str:
    """The text protocol's instructions (``prompts/openhands/text_protocol.md``) with this agent's tools."""
    prompt = load_prompt(NAME, "text_protocol")
    remember(ctx, prompt)
    return prompt.fill(tools=tools_text(TOOLS), main_file=main_files(ctx)[0])


def no_tool_call_reason(scratch: dict[str, Any]) -> str | None:
    """Why an attempt whose model never called a tool ends (its replies, the modes they were asked in), or None
    when the model called one."""
    if scratch.get("replies_with_tool_calls"):
        return None
    replies = scratch.get("tool_mode_replies") or {}
    used = [mode for mode in ("native", "text") if replies.get(mode)]
    if not used:
        return None
    modes = {("native",): "native tool calling", ("text",): "text protocol"}.get(tuple(used),
                                                                                  "native and text protocol")
    total = sum(replies.values())
    return f"the model made no tool call in {total} repl{'y' if total == 1 else 'ies'} ({modes})"


def _event(state_scratch: dict[str, Any], kind: str, **data: Any) -> list[dict[str, Any]]:
    """The events with one more, validated as its typed ``Action`` or ``Observation``."""
    event = (Action if kind == "action" else Observation).model_validate(data)
    return [*state_scratch.get("events", []), event.model_dump(mode="json")]


async def step(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """One model call with the tools offered; its tool calls wait in ``scratch['calls']`` for ``act``."""
    scratch = dict(state.get("scratch") or {})
    steps = state.get("steps") or 0
    if steps >= max_steps(ctx):
        # out of steps: hand off what is in the workspace (it is checked if it changed since the last check)
        scratch["events"] = _event(
            scratch,
            "observation",
            step=steps,
            tool="budget",
            content=f"step budget of {max_steps(ctx)} model calls used up: the workspace is handed over as it is",
        )
        scratch["calls"] = [{"id": "budget", "name": "finish", "arguments": {}, "implicit": True}]
        return {"scratch": scratch}
    # the conversation is re-sent at every step: its long old payloads are elided to keep it under a size
    messages = bounded_history(list(state.get("messages") or []))
    mode = scratch.get("tool_mode") or "native"
    try:
        text, summary, response = await nodes.call_model(
            ctx, messages, purpose="step", round_index=state.get("round_index", 0),
            **({"tools": TOOLS} if mode == "native" else {}),
        )
    except SysmoError as exc:
        return {"status": "error", "error": f"model call failed: {exc}", "pending": messages}
    replies = dict(scratch.get("tool_mode_replies") or {})
    replies[mode] = replies.get(mode, 0) + 1
    scratch["tool_mode_replies"] = replies
    native: list[ToolCall] = list(getattr(response, "tool_calls", None) or []) if mode == "native" else []
    switched = False
    if mode == "native" and not native and steps == 0 and scratch.get("tool_mode_fallback"):
        # the first reply carries no tool call: the model is asked in text from now on (this reply's blocks count)
        mode = scratch["tool_mode"] = "text"
        offered = str(scratch.get("tool_mode_reason") or "").split("; the text protocol if")[0]
        scratch["tool_mode_reason"] = f"the first reply carried no native tool call (offered natively: {offered})"
        switched = True
    prose = text
    parsed: list[ToolCall] = []
    if mode == "text":
        parsed, prose = parse_tool_blocks(text, id_prefix=f"text_{steps + 1}")
    calls = [
        {"id": c.id, "name": c.name, "arguments": c.arguments, "error": c.error, "text": mode == "text"}
        for c in (native or parsed)
    ]
    if calls:
        scratch["replies_with_tool_calls"] = (scratch.get("replies_with_tool_calls") or 0) + 1
    assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
    if native:
        assistant["tool_calls"] = [c.to_openai() for c in native]
    scratch["events"] = _event(
        scratch,
        "action",
        step=steps + 1,
        text=prose,
        tool_calls=[{k: c[k] for k in ("name", "arguments", "error")} for c in calls],
    )
    scratch["calls"] = calls
    update: dict[str, Any] = {
        "pending": messages,
        "messages": [*messages, assistant],
        "steps": steps + 1,
        "scratch": scratch,
        "llm_calls": [*(state.get("llm_calls") or []), summary.model_dump()],
        "llm_time_s": (state.get("llm_time_s") or 0.0) + summary.latency_s,
        "response": (state.get("response") or "") + _render_step(prose, calls),
    }
    if not calls:
        how = ("with a tool block (```tool, then {\"name\": ..., \"arguments\": {...}}, then ```)"
               if mode == "text" else "")
        note = (
            f"No tool was called. Act only through the tools{' ' + how if how else ''}: write_file the complete "
            "model, then run_check."
            if text.strip()
            else f"The reply was empty. Call write_file{' ' + how if how else ''} with the complete model, then "
            "run_check."
        )
        scratch["events"] = _event(scratch, "observation", step=steps + 1, tool=None, error=note)
        if switched:  # the model is told the text protocol (the event keeps the short note)
            note = "No tool was called. " + text_protocol(ctx)
        update["messages"].append({"role": "user", "content": note})
    return update


def _render_step(text: str, calls: list[dict[str, Any]]) -> str:
    lines = [text.strip()] if text.strip() else []
    for call in calls:
        args = {
            k: (v if not isinstance(v, str) or len(v) < 80 else f"<{len(v)} chars>")
            for k, v in (call["arguments"] or {}).items()
        }
        lines.append(
            f"-> {call['name']}({json.dumps(args)})"
            + (f"  [error: {call['error']}]" if call.get("error") else "")
        )
    return "\n".join(lines) + "\n" if lines else ""


def act(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Execute the pending tool calls in order on the workspace directory; each check of it closes a round."""
    scratch = dict(state.get("scratch") or {})
    workspace = workspace_of(ctx, scratch)
    # ``scratch["workspace"]``: the files the tools wrote, in the order of their last write. Only the tools write
    # the directory, so it holds the same, unless this step was resumed or forked from a checkpoint (the directory
    # went on, or went away): then it is put back as it was at that step
    snapshot = dict(scratch.get("workspace") or {})
    if workspace.files() != snapshot:
        workspace.restore(snapshot)
    messages = list(state.get("messages") or [])
    rounds: list[dict[str, Any]] = []
    update: dict[str, Any] = {}
    round_index = state.get("round_index", 0)
    round_fields = {
        "llm_calls": state.get("llm_calls") or [],
        "response": state.get("response") or "",
        "llm_time_s": state.get("llm_time_s") or 0.0,
        "round_started": state.get("round_started"),
    }
    step_number = state.get("steps") or 0
    text_results: list[tuple[str, str]] = []  # the text protocol's results, sent back as one user message

    def flush_text_results() -> None:
        if text_results:
            messages.append({"role": "user", "content": results_message(text_results)})
            text_results.clear()

    def observe(call: dict[str, Any], content: str, error: str | None = None) -> None:
        if len(content) > MAX_OBSERVATION_CHARS:  # a large workspace file read back, say
            content = (f"{content[:MAX_OBSERVATION_CHARS]}\n... [{len(content) - MAX_OBSERVATION_CHARS:,} "
                       "characters more not shown]")
        if call.get("implicit"):
            pass
        elif call.get("text"):
            text_results.append((call["name"], content))
        else:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        scratch["events"] = _event(
            scratch, "observation", step=step_number, tool=call["name"], content=content[:4000], error=error
        )

    def wrote(name: str) -> None:
        snapshot.pop(name, None)  # re-insert: the snapshot's order is the order of last writes
        snapshot[name] = workspace.read(name)

    def current_artifact() -> Artifact | None:
        return workspace_artifact(ctx, workspace.files(), list(snapshot))

    def run_check(call: dict[str, Any]) -> CheckResult | None:
        nonlocal round_index, round_fields
        artifact = current_artifact()  # what is on disk now, read back from the workspace directory
        if artifact is None:
            observe(call, "The workspace is empty: write the model with write_file first.", "empty workspace")
            return None
        started = time.monotonic()
        try:
            result = ctx.checker(artifact, ctx.task)
        except SysmoError as exc:
            result = CheckResult(tool="checker", outcome=Outcome.ERROR, raw_output=str(exc))
        tool_time = time.monotonic() - started
        observe(call, "The check passed." if result.ok else feedback_report(artifact, result, ctx.feedback))
        scratch["checks"] = scratch.get("checks", 0) + 1
        scratch["checked_sha"], scratch["last_ok"] = artifact.sha256, result.ok
        rnd = Round(
            index=round_index,
            kind="generate" if round_index == 0 else "repair",
            messages=list(state.get("pending") or []),
            response=round_fields["response"],
            llm_calls=[LLMCallSummary.model_validate(c) for c in round_fields["llm_calls"]],
            artifact=artifact,
            check=result,
            tool_time_s=tool_time,
            llm_time_s=round_fields["llm_time_s"],
            duration_s=time.monotonic() - (round_fields["round_started"] or started),
        )
        rounds.append(rnd.model_dump(mode="json"))
        round_index += 1
        round_fields = {"llm_calls": [], "response": "", "llm_time_s": 0.0, "round_started": time.monotonic()}
        update["check"] = result.model_dump(mode="json")
        update["artifact"] = artifact.model_dump(mode="json")
        return result

    for call in scratch.get("calls") or []:
        if attempt_over():  # --attempt-timeout passed while this step ran: its results are not kept
            break
        name, args = call["name"], call.get("arguments") or {}
        if call.get("error"):
            again = (f"Call {name} again with a JSON object of its parameters" if name != "(unreadable)" else
                     'Write the block again: ```tool, then {"name": "<tool>", "arguments": {...}} as JSON, then ```')
            observe(call, f"Error: {call['error']}. {again}.", call["error"])
            continue
        if name in ("write_file", "read_file", "edit_file"):
            try:
                if name == "write_file":
                    content = args.get("content")
                    if not isinstance(content, str):
                        raise WorkspaceError("write_file needs the whole file as `content`")
                    written = workspace.write(args.get("path"), content)
                    wrote(written)
                    observe(call, f"Wrote {written} ({len(content.splitlines())} lines).")
                elif name == "edit_file":
                    path = args.get("path")
                    observe(call, workspace.edit(path, args.get("old_text"), args.get("new_text")))
                    wrote(workspace.name_of(path))
                else:
                    observe(call, workspace.read(args.get("path")))
            except WorkspaceError as exc:
                observe(call, f"Error: {exc}", str(exc))
        elif name in ("list_source", "view_source", "search_source"):
            sources = ctx.task.inputs.source_files
            try:
                if name == "list_source":
                    observe(call, list_sources(sources))
                elif name == "view_source":
                    start, end = args.get("start") or 1, args.get("end")
                    observe(call, view_source(sources, str(args.get("path") or ""), int(start),
                                              int(end) if end is not None else None))
                else:
                    observe(call, search_sources(sources, str(args.get("pattern") or "")))
            except (KeyError, ValueError, TypeError) as exc:
                message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
                observe(call, f"Error: {message}", "bad source request")
        elif name == "run_check":
            result = run_check(call)
            if result is not None and result.ok:
                update["status"] = "passed"
                break
            if scratch.get("checks", 0) >= max_checks(ctx):
                update["status"] = "failed"
                break
        elif name == "finish":
            artifact = current_artifact()
            if artifact is None:
                if call.get("implicit"):
                    observe(
                        call,
                        "Nothing to hand over: the workspace is empty.",
                        "finished with an empty workspace",
                    )
                    update.update(status="failed",
                                  error=no_tool_call_reason(scratch) or "the agent finished with an empty workspace")
                    break
                observe(
                    call,
                    "The hand-off is refused: the workspace is empty. Write the model with write_file first.",
                    "finish with an empty workspace",
                )
                continue
            if scratch.get("checked_sha") != artifact.sha256:  # the hand-off is checked, as in every agent
                result = run_check(call)
                ok = bool(result and result.ok)
            else:
                ok = bool(scratch.get("last_ok"))
                observe(call, "The check passed: handed over." if ok else "The last check failed.")
            if ok:
                update["status"] = "passed"
                break
            if call.get("implicit") or scratch.get("checks", 0) >= max_checks(ctx):
                update["status"] = "failed"
                break
            flush_text_results()
            messages.append(
                {
                    "role": "user",
                    "content": "The hand-off is refused while the check fails: fix the "
                    "problems reported above, then run_check again.",
                }
            )
        else:
            observe(
                call,
                f"Error: unknown tool {name!r}; use write_file, read_file, edit_file, list_source, view_source, "
                "search_source, run_check or finish.",
                f"unknown tool {name}",
            )
    flush_text_results()
    scratch.update(workspace=snapshot, calls=[])
    update.update(scratch=scratch, messages=messages, round_index=round_index, rounds=rounds, **round_fields)
    return update


def route_after_step(state: AgentState) -> str:
    return "end" if state.get("status") == "error" else "act"


def route_after_act(state: AgentState) -> str:
    return "end" if state.get("status") in ("passed", "failed", "error") else "step"


def _write_calls(artifact: Artifact) -> list[dict[str, Any]]:
    calls = [{"name": "write_file", "arguments": {"path": name, "content": text}}
             for name, text in sorted(artifact.files.items())]
    return calls + [{"name": "run_check", "arguments": {}}]


def edit_between(before: str, after: str) -> tuple[str, str] | None:
    """The one edit (whole lines: old text -> new text) turning ``before`` into ``after``, its old text widened by
    surrounding lines until it occurs once in ``before``; None when there is nothing to change."""
    if before == after:
        return None
    prefix = 0
    while prefix < min(len(before), len(after)) and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(before), len(after)) - prefix and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    start = before.rfind("\n", 0, prefix) + 1  # widen to whole lines of ``before``
    end_before = before.find("\n", len(before) - suffix)
    end_before = len(before) if end_before < 0 else end_before + 1
    if start == end_before and start > 0:  # an insertion after the last line: the edit takes that line along
        start = before.rfind("\n", 0, start - 1) + 1
    # the old text must occur once: take in a line before, then one after, until it does
    widen_before = True
    while before.count(before[start:end_before]) != 1 and (start > 0 or end_before < len(before)):
        if (widen_before or end_before == len(before)) and start > 0:
            start = before.rfind("\n", 0, start - 1) + 1
        else:
            nxt = before.find("\n", end_before)
            end_before = len(before) if nxt < 0 else nxt + 1
        widen_before = not widen_before
    end_after = len(after) - (len(before) - end_before)
    return before[start:end_before], after[start:end_after]


def _fix_calls(broken: Artifact, reference: Artifact) -> list[dict[str, Any]]:
    """The calls fixing ``broken`` into ``reference``: an edit of each changed file (its whole content for a new
    one); then the check."""
    calls: list[dict[str, Any]] = []
    for name, text in sorted(reference.files.items()):
        edit = edit_between(broken.files[name], text) if name in broken.files else None
        if edit is not None:
            calls.append({"name": "edit_file", "arguments": {"path": name, "old_text": edit[0], "new_text": edit[1]}})
        elif broken.files.get(name) != text:
            calls.append({"name": "write_file", "arguments": {"path": name, "content": text}})
    return calls + [{"name": "run_check", "arguments": {}}]


def control_answers(task: Task) -> list[MockAnswer]:
    """``mockllm/control``: write the broken model and check it, then fix it (an edit of the broken lines) and
    check it again; any later step writes the reference whole."""
    reference = task.references.model
    assert reference is not None
    broken = broken_artifact(task)
    out = [MockAnswer(tool_calls=_write_calls(broken), when=when(task, NAME, "step", 0)),
           MockAnswer(tool_calls=_fix_calls(broken, reference), when=when(task, NAME, "step", 1))]
    return out + [MockAnswer(tool_calls=_write_calls(reference), when=when(task, NAME, "step", r))
                  for r in range(2, MAX_ROUND + 1)]


@register_agent(
    NAME,
    supports=set(TaskKind),
    uses=("source",),
    description="OpenHands-style tool-calling agent: typed actions and observations; list_source / view_source / "
    "search_source read the system's code (not pasted into the prompt), write_file / read_file / edit_file / "
    "run_check / finish work on the model in a workspace directory on disk; a step budget tied to the repair "
    "rounds.",
    prompts=(f"{NAME}/system", f"{NAME}/task", f"{NAME}/text_protocol", "common/task_<kind>"),
    control_answers=control_answers,
)
def build(ctx: AgentContext, checkpointer: Any = None):
    graph = StateGraph(AgentState, context_schema=AgentContext)
    add_node(graph, "setup", setup)
    add_node(graph, "step", step, Edges(route_after_step, {"end": END, "act": "act"}))
    add_node(graph, "act", act, Edges(route_after_act, {"end": END, "step": "step"}))
    graph.add_edge(START, "setup")
    graph.add_edge("setup", "step")
    return graph.compile(checkpointer=checkpointer)
