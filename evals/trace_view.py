"""``sysmo trace``: one attempt as a terminal timeline, or as JSON, to see what the agent and the tools did.

Round by round (prompt folded, reply, artifact diff, diagnostics next to the lines they name, scores), then
every model call of every role from its event stream (prompt and reply: pre-stages, tool-calling steps,
helper and judge calls while scoring), or as JSON for machines (``events``: the whole typed stream).

Every long block is folded unless ``full``: prompts and replies to ``FOLD_CHARS``, a diff to ``FOLD_LINES`` (files
past ``DIFF_MAX_LINES`` are not diffed), the numbered artifact to the lines around its first
``LISTING_DIAGNOSTICS`` diagnosed lines, a line or a tool answer to its start; a 150k-line attempt prints about
100 kB instead of 25 MB."""

from __future__ import annotations

import difflib
import json
import sqlite3
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.scorecard import ScoreCard
from sysmo.contracts.attempt import Attempt, Round
from sysmo.graphs.checkpoint import CheckpointStep, history
from sysmo.llm.sent import dropped_text, received_text, requested_text
from sysmo.contracts.check import CheckResult

FOLD_CHARS = 600
FOLD_LINES = 60  # a diff shows this many lines folded (two thirds from its start, one third from its end)
DIFF_MAX_LINES = 20_000  # folded, files longer than this are not diffed (difflib can take minutes on them)
LISTING_DIAGNOSTICS = 20  # folded, the annotated listing shows the lines around this many diagnostics
LISTING_CONTEXT = 2  # lines shown around a diagnosed line
SYNTAX = {"tla": "text", "sysml": "text", "plantuml": "text"}


def fold(text: str, limit: int = FOLD_CHARS) -> str:
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-limit // 3:]
    return f"{head}\n  ... [{len(text) - len(head) - len(tail)} characters folded; --full shows all] ...\n{tail}"


def fold_line(line: str, limit: int = FOLD_CHARS // 3) -> str:
    """One line kept to one line: its start, and how much was folded."""
    return line if len(line) <= limit else f"{line[:limit]} ... [{len(line) - limit:,} characters folded]"


def fold_lines(text: str, limit: int = FOLD_LINES) -> str:
    """``text`` with at most ``limit`` lines (each folded by ``fold_line``), the rest named in one line."""
    lines = text.splitlines()
    if len(lines) > limit:
        head, tail = limit * 2 // 3, limit // 3
        lines = [*lines[:head], f"  ... [{len(lines) - head - tail:,} lines folded; --full shows all] ...",
                 *lines[len(lines) - tail:]]
    elif all(len(line) <= FOLD_CHARS // 3 for line in lines):
        return text
    return "\n".join(fold_line(line) for line in lines)


def artifact_diff(before: Artifact | None, after: Artifact | None, max_lines: int | None = None) -> str:
    """Unified diff of every file between two rounds' artifacts; with ``max_lines``, a file longer than that (on
    either side) is named with its line counts instead of diffed."""
    if after is None:
        return ""
    old = before.files if before else {}
    out = []
    for name in sorted(set(old) | set(after.files)):
        a, b = old.get(name, ""), after.files.get(name, "")
        if a == b:
            continue
        a_lines, b_lines = a.splitlines(), b.splitlines()
        if max_lines is not None and max(len(a_lines), len(b_lines)) > max_lines:
            out.append(f"{name}: changed ({len(a_lines):,} lines before, {len(b_lines):,} after): too long to diff "
                       "here; --full shows the diff")
            continue
        out.extend(difflib.unified_diff(a_lines, b_lines, f"previous/{name}", f"this/{name}", lineterm=""))
    return "\n".join(out)


def diagnostics_by_line(artifact: Artifact, check: CheckResult | None) -> dict[tuple[str, int], list[str]]:
    """Each diagnostic that names a line, under (file of the artifact, line number); a diagnostic naming a file
    the artifact does not have goes to its main file."""
    by_line: dict[tuple[str, int], list[str]] = {}
    for d in (check.diagnostics if check else []):
        if d.line:
            fname = (d.file or artifact.main_file or "").rsplit("/", 1)[-1]
            if fname not in artifact.files:
                fname = artifact.main_file or ""
            by_line.setdefault((fname, d.line), []).append(f"{d.severity.value}{'[' + d.code + ']' if d.code else ''}: {d.message}")
    return by_line


def annotated_listing(artifact: Artifact, check: CheckResult | None, full: bool = True) -> Text:
    """The artifact's lines with each diagnostic printed under the line it names. Folded (``full`` False): only
    the lines around the first ``LISTING_DIAGNOSTICS`` diagnosed lines, each line and message folded, the rest
    named in one line."""
    by_line = diagnostics_by_line(artifact, check)
    text = Text()
    shown_marks = sorted(by_line)[:LISTING_DIAGNOSTICS] if not full else sorted(by_line)
    for name, body in artifact.files.items():
        text.append(f"── {name}\n", style="bold")
        lines = body.splitlines()
        if full:
            numbers = range(1, len(lines) + 1)
        else:  # the diagnosed lines with a few around them
            wanted = {n + d for (fname, n) in shown_marks if fname == name
                      for d in range(-LISTING_CONTEXT, LISTING_CONTEXT + 1) if 1 <= n + d <= len(lines)}
            numbers = sorted(wanted)
        last = 0
        for n in numbers:
            if n > last + 1:
                text.append(f"     ... [lines {last + 1}-{n - 1} folded; --full shows all]\n", style="dim")
            last = n
            marks = by_line.get((name, n))
            text.append(f"{n:>4} {'>' if marks else '|'} ", style="red" if marks else "dim")
            text.append((lines[n - 1] if full else fold_line(lines[n - 1])) + "\n")
            for msg in marks or []:
                text.append(f"       ^ {msg if full else fold_line(msg)}\n", style="bold red")
        if not full and last < len(lines):
            text.append(f"     ... [lines {last + 1}-{len(lines)} folded; --full shows all]\n", style="dim")
        for (fname, n), msgs in by_line.items():
            if fname == name and n > len(lines):
                for msg in msgs:
                    text.append(f"  (line {n}) {msg if full else fold_line(msg)}\n", style="bold red")
    hidden = len(by_line) - len(shown_marks)
    if hidden > 0:
        text.append(f"  ({hidden:,} more diagnosed lines; --full shows them)\n", style="dim")
    return text


def round_panel(rnd: Round, previous: Artifact | None, full: bool = False, inherited: bool = False) -> Panel:
    parts: list[Any] = []
    prompt = rnd.messages[-1]["content"] if rnd.messages else ""
    parts.append(Text(f"prompt ({len(rnd.messages)} messages; last shown):", style="bold cyan"))
    parts.append(Text(prompt if full else fold(str(prompt))))
    calls = ", ".join(f"{c.role}:{c.model} {c.prompt_tokens}+{c.completion_tokens} tok ${c.cost_usd:.4f}"
                      f"{' cached' if c.cached else ''}" for c in rnd.llm_calls)
    parts.append(Text(f"response ({calls or 'no call'}):", style="bold cyan"))
    parts.append(Text(rnd.response if full else fold(rnd.response)))
    if rnd.extraction_error:
        parts.append(Text(f"extraction error: {rnd.extraction_error}", style="bold red"))
    if rnd.error:
        parts.append(Text(f"error: {rnd.error}", style="bold red"))
    if rnd.artifact is not None and previous is not None:
        diff = artifact_diff(previous, rnd.artifact, max_lines=None if full else DIFF_MAX_LINES)
        parts.append(Text("diff against the previous round:", style="bold cyan"))
        parts.append(Syntax((diff if full else fold_lines(diff)) or "(no change)", "diff", theme="ansi_dark",
                            word_wrap=True))
    if rnd.check is not None:
        c = rnd.check
        style = "green" if c.ok else "red"
        parts.append(Text(f"{c.tool} {c.tool_version}: {c.outcome.value} ({len(c.diagnostics)} diagnostics, "
                          f"{c.duration_s:.2f} s{', cached run' if c.details.get('cached') else ''})",
                          style=f"bold {style}"))
        if rnd.artifact is not None and (c.diagnostics or full):
            parts.append(annotated_listing(rnd.artifact, c, full=full))
        trace = c.details.get("trace") if c.details else None
        if trace:
            parts.append(Text(f"TLC counterexample: {len(trace)} states", style="bold red"))
    # a fork's round taken from its parent: the parent's record, its time the parent's run
    title = f"round {rnd.index} · {rnd.kind} · {rnd.duration_s:.2f} s" + (" (inherited: the parent's round)"
                                                                           if inherited else "")
    return Panel(Group(*parts), title=title, title_align="left")


def graph_steps(attempt: Attempt, experiment_dir: Path | None = None) -> list[CheckpointStep]:
    """The attempt's LangGraph steps from its checkpoint file ([] when it kept none or the file is gone).

    The recorded path may be relative to where the run started; the experiment's folder is tried too."""
    if not attempt.checkpoint_db:
        return []
    recorded = Path(attempt.checkpoint_db)
    candidates = [recorded] + ([experiment_dir / recorded.name] if experiment_dir is not None else [])
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        return []
    try:
        return history(found, attempt.id)
    except sqlite3.Error:
        return []


def fork_lines(attempt: Attempt, forks: list[str] | None = None) -> list[tuple[str, str]]:
    """The head rows that link a fork and its parent: what it was forked from (step, checkpoint, changes), and
    the forks made of it."""
    rows = []
    if attempt.parent_attempt_id:
        changes = ", ".join(f"{k} {v}" for k, v in attempt.fork_changes.items()) or "no change"
        n = attempt.inherited_rounds
        kept = "" if n == 0 else "; round 0 is the parent's" if n == 1 else f"; rounds 0-{n - 1} are the parent's"
        rows.append(("forked from", f"{attempt.parent_attempt_id} at step {attempt.forked_at_step} (checkpoint "
                                    f"{attempt.forked_at}; {changes}){kept}"))
    if forks:
        rows.append(("forks", ", ".join(forks)))
    return rows


def steps_table(steps: list[CheckpointStep], attempt: Attempt) -> Table:
    """The attempt's graph steps, numbered as ``sysmo fork --at`` takes them."""
    table = Table(title=f"graph steps (fork one: sysmo fork {attempt.id} --at STEP)", title_justify="left")
    for column in ("step", "after node", "next", "round", "status", "checkpoint id"):
        table.add_column(column, overflow="fold")
    for step in steps:
        if step.step < 0:
            continue  # the input checkpoint: nothing of the agent's has run
        before_call = step.next == ["generate"] and step.round_index is not None
        table.add_row(str(step.step), step.node or "(start)", ", ".join(step.next) or "(end)",
                      f"round:{step.round_index}" if before_call else
                      ("" if step.round_index is None else str(step.round_index)), step.status or "",
                      step.checkpoint_id)
    return table


def settings_panel(settings: dict[str, Any], title: str = "run settings") -> Panel:
    """Every setting of the run (``tables.run_settings``) as a two-column panel."""
    from sysmo.evals.tables import settings_lines

    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")  # whole values at any width: wrapped, never cut with an ellipsis
    for name, value in settings_lines(settings):
        grid.add_row(name, Text(value))
    return Panel(grid, title=title, title_align="left")


def render_attempt(attempt: Attempt, card: ScoreCard | None, console: Console, full: bool = False,
                   experiment_dir: Path | None = None, forks: list[str] | None = None,
                   settings: dict[str, Any] | None = None) -> None:
    from sysmo.llm.roles import model_kind
    from sysmo.terminal import escape_terminal_data

    # model text (replies, artifacts, diagnostics quoting them, errors) reaches the terminal only escaped
    from sysmo.contracts.events import EventAdapter

    # (the event stream is not part of the attempt's dump: it is escaped event by event and put back)
    events = [EventAdapter.validate_python(escape_terminal_data(EventAdapter.dump_python(event, mode="json")))
              for event in attempt.events]
    attempt = Attempt.model_validate(escape_terminal_data(attempt.model_dump(mode="json")))
    attempt.events = events
    card = ScoreCard.model_validate(escape_terminal_data(card.model_dump(mode="json"))) if card is not None else None
    settings = escape_terminal_data(settings) if settings is not None else None
    kind = model_kind(attempt.model)
    control = {"control": " [CONTROL: offline provider]", "replay": " [REPLAY: published output]"}.get(kind, "")
    head = Table.grid(padding=(0, 2))
    head.add_row("attempt", attempt.id)
    head.add_row("task / agent / model", f"{attempt.task_id} / {attempt.agent} / {attempt.model}{control}")
    fork = attempt.parent_attempt_id is not None
    head.add_row("sample / seed", f"{attempt.sample_index} / {attempt.seed if attempt.seed is not None else 'none sent'}"
                 + (" (the parent's)" if fork else ""))
    head.add_row("arm", attempt.arm_label)
    if attempt.time_limit_s:
        head.add_row("time limit", f"{attempt.time_limit_s:g} s wall clock")
    head.add_row("status", f"{attempt.status.value} after {len(attempt.rounds)} round(s), {attempt.duration_s:.2f} s"
                 + ((" (its own run" + (f"; {attempt.inherited_rounds} inherited round(s), timed as the parent ran "
                                         "them)" if attempt.inherited_rounds else ")")) if fork else ""))
    head.add_row("tokens / cost", f"{attempt.prompt_tokens}+{attempt.completion_tokens}; spent "
                                  f"${attempt.spend_usd:.4f}; incl. cached at list price ${attempt.cost_usd:.4f}")
    calls = [e for e in attempt.events if e.type == "llm_call"]
    if calls:
        failed = sum(1 for c in calls if c.error)
        head.add_row("model calls", f"{len(calls)} ({sum(c.cached for c in calls)} cached, {failed} failed; "
                                    f"{sum(c.stage == 'score' for c in calls)} while scoring), "
                                    f"each shown below; all {len(attempt.events)} events in --json")
        dropped = dropped_text([c.sent_params for c in calls])
        if dropped:  # litellm's drop_params: what the provider never received, though the run asked for it
            head.add_row("dropped by the provider", dropped)
    if attempt.extras.get("tool_mode"):  # openhands: how its tool calls travelled (docs/agents/openhands.md)
        replies = attempt.extras.get("tool_mode_replies") or {}
        counted = ", ".join(f"{mode} {n}" for mode, n in replies.items() if n)
        head.add_row("tool calling", f"{attempt.extras['tool_mode']} ({attempt.extras.get('tool_mode_reason') or ''})"
                     + (f"; replies: {counted}" if counted else ""))
    if attempt.error:
        from sysmo.evals.error_kinds import error_kind

        kind = error_kind(attempt.status.value, attempt.error)
        head.add_row("error", f"{kind} error: {attempt.error}" if kind else attempt.error)
    elif attempt.failure_reason():
        head.add_row("why it failed", attempt.failure_reason())
    for name, text in fork_lines(attempt, forks):
        head.add_row(name, text)
    steps = graph_steps(attempt, experiment_dir)
    nodes = [step.node for step in steps if step.node not in (None, "__start__")]
    if nodes:
        head.add_row("graph steps", f"{' > '.join(nodes)}  (checkpoints: {attempt.checkpoint_db}; each step below)")
    console.print(Panel(head, title="sysmo trace", title_align="left"))
    if nodes:
        console.print(steps_table(steps, attempt))
    if settings is not None:
        console.print(settings_panel(settings, "settings of its run"))
    previous: Artifact | None = None
    for i, rnd in enumerate(attempt.rounds):
        console.print(round_panel(rnd, previous, full=full, inherited=i < attempt.inherited_rounds))
        previous = rnd.artifact or previous
    for role, document in (attempt.extras.get("documents") or {}).items():  # metagpt's typed SOP documents
        text = json.dumps(document, indent=2)
        console.print(Panel(text if full else fold(text), title=f"document: {role}", title_align="left"))
    agent_events = attempt.extras.get("events")
    if agent_events:  # openhands' typed actions and observations
        console.print(Panel(Text("\n".join(agent_event_lines(agent_events, full=full))),
                            title="actions and observations", title_align="left"))
    for panel in llm_call_panels(attempt.events, full=full):
        console.print(panel)
    if card is not None:
        table = Table(title=f"scores ({card.cascade})")
        for col in ("stage", "value", "outcome", "metrics", "skipped because"):
            table.add_column(col)
        for s in card.stages:
            metrics = ", ".join(f"{k}={v:.3f}" for k, v in s.metrics.items() if isinstance(v, (int, float)))
            # a stage not scored has no value: "—" (never 0.000), the reason beside it
            table.add_row(s.stage, f"{s.value:.3f}" if s.scored else "—", s.outcome if s.scored else "not scored",
                          metrics if s.scored else "", s.skipped_because or "")
        console.print(table)
        for s in card.stages:
            lines = mapping_lines(s.detail)
            if lines:
                console.print(Panel(Text("\n".join(lines)), title=f"{s.stage}: trace mapping", title_align="left"))


def mapping_lines(detail: dict[str, Any]) -> list[str]:
    """A conformance stage's trace mapping as lines: each event's action, each field's variable, what could not be
    placed, and the next-state relation the steps were checked against (nothing for other stages)."""
    mapping = detail.get("mapping")
    if not isinstance(mapping, dict) or "actions" not in mapping:
        return []
    lines = [f"mapping by {mapping.get('source', '?')}"]
    for entry in mapping.get("actions", []):
        action = entry.get("action")
        target = f"{action}({', '.join(entry.get('arguments') or [])})" if action else \
            f"{mapping.get('next_action', 'Next')} (state only)"
        lines.append(f"  event {entry.get('event')} -> {target}")
    lines += [f"  field {v.get('field')} -> {v.get('variable')}" for v in mapping.get("variables", [])]
    lines += [f"  config {key} -> {constant}" for key, constant in (mapping.get("constants") or {}).items()]
    unplaced = detail.get("unplaced") or []
    coverage = detail.get("coverage") or {}
    share = f" (mapping coverage {coverage['value']:.3f})" if isinstance(coverage.get("value"), float) else ""
    lines.append(f"unplaced: {', '.join(unplaced)}{share}" if unplaced else f"unplaced: none{share}")
    refinement = detail.get("refinement") or {}
    if refinement.get("checked"):
        lines.append(f"every step checked against [{refinement.get('action')}]_{refinement.get('subscript')} "
                     f"({refinement.get('source')})")
    elif refinement:
        lines.append(f"steps not checked against the model's Next: {refinement.get('note')}")
    lines += [f"note: {note}" for note in mapping.get("notes", [])]
    return lines


def _argument(value: Any, full: bool) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    if not full and ("\n" in text or len(text) > 40):
        count = len(text.splitlines()) or 1
        return f"<{count} line{'s' if count != 1 else ''}, {len(text)} chars>"
    return json.dumps(text) if isinstance(value, str) else text


def agent_event_lines(events: list[dict[str, Any]], full: bool = False) -> list[str]:
    """One line per action (the tool calls of a model reply) and per observation (the tool's answer: its
    first line, or all of it with ``full``), as the attempt's ``extras["events"]`` holds them (typed)."""
    from sysmo.contracts.agent_events import Action, AgentEventList

    lines: list[str] = []
    for event in AgentEventList.validate_python(events):
        if isinstance(event, Action):
            calls = ", ".join(f"{c.name}(" + ", ".join(f"{k}={_argument(v, full)}" for k, v in c.arguments.items())
                              + ")" for c in event.tool_calls) or f"no tool called; said {_argument(event.text, full)}"
            lines.append(f"step {event.step} action: {calls}")
            continue
        body = event.error or event.content or ""
        shown = body if full else fold_line((body.splitlines() or [""])[0])
        if not full and len(body.splitlines()) > 1:
            shown += f" (+{len(body.splitlines()) - 1} lines)"
        where = f"{event.tool or 'reply'}{', refused' if event.error else ''}"
        lines.append(f"step {event.step} observation [{where}]: {shown}")
    return lines


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    text = str(content or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        text += f"\n-> {function.get('name')}({function.get('arguments')})"
    return text


def llm_call_panels(events: list[Any], full: bool = False) -> list[Panel]:
    """One panel per model call in the event stream: who made it (stage, role, purpose, round), its cost, the
    prompt (every message with --full, else the last one folded) and the reply or the error."""
    from sysmo.contracts.events import LLMCallEvent

    panels = []
    for event in events:
        if not isinstance(event, LLMCallEvent):
            continue
        messages = event.messages if full else event.messages[-1:]
        body = Text()
        if not full and len(event.messages) > 1:
            body.append(f"({len(event.messages) - 1} earlier message(s); --full shows them)\n", style="dim")
        for message in messages:
            text = _message_text(message)
            body.append(f"[{message.get('role')}] ", style="bold cyan")
            body.append((text if full else fold(text)) + "\n")
        body.append("parameters: ", style="bold")
        body.append(requested_text(event.params) or "none", style="dim")
        received = received_text(event.sent_params)
        if received:
            body.append("\nthe provider received: ", style="bold")
            body.append(received + "\n", style="bold yellow" if event.sent_params.get("dropped") else "dim")
        else:
            body.append("\n")
        if event.error:
            body.append(f"error ({event.error_type}): {event.error}", style="bold red")
        else:
            reply = event.text
            for call in (event.response or {}).get("tool_calls") or []:
                reply += f"\n-> {call.get('name')}({call.get('arguments_json')})"
            body.append("reply: ", style="bold green")
            body.append(reply if full else fold(reply))
        where = " ".join(x for x in (event.stage, event.role, event.purpose or "",
                                      f"round {event.round}" if event.round is not None else "") if x)
        cost = (f"{event.prompt_tokens}+{event.completion_tokens} tok, ${event.cost_usd:.4f}"
                f"{' cached ($0 spent)' if event.cached else ''}, {event.latency_s:.2f} s")
        panels.append(Panel(body, title=f"model call #{event.seq}: {where} [{event.model}]", subtitle=cost,
                            title_align="left", subtitle_align="right"))
    return panels


def attempt_json(attempt: Attempt, card: ScoreCard | None, experiment_dir: Path | None = None,
                 forks: list[str] | None = None, settings: dict[str, Any] | None = None) -> str:
    data = attempt.model_dump(mode="json")
    data["forks"] = list(forks or [])
    data["arm_label"] = attempt.arm_label
    if settings is not None:
        data["run_settings"] = settings
    previous = None
    for rnd, raw in zip(attempt.rounds, data["rounds"]):
        raw["diff"] = artifact_diff(previous, rnd.artifact) if rnd.artifact else ""
        previous = rnd.artifact or previous
    data["scorecard"] = card.model_dump(mode="json") if card else None
    for stage, raw in zip(card.stages if card else [], (data["scorecard"] or {}).get("stages", [])):
        if not stage.scored:  # no value, not 0: the reason is in skipped_because
            raw["value"] = None
            raw["metrics"] = {name: None for name in raw["metrics"]}
        raw["scored"] = stage.scored
    data["graph_steps"] = [step.model_dump() for step in graph_steps(attempt, experiment_dir)]  # checkpoint ids to fork from
    data["spend_usd"] = attempt.spend_usd
    data["events"] = [event.model_dump(mode="json") for event in attempt.events]
    return json.dumps(data, indent=2)
