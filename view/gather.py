"""Turns what the experiment store holds into the view models of ``sysmo view`` (``sysmo.view.models``).

The one place that reads data for the viewer: experiments and attempts through ``sysmo.store.Store``, an
attempt's graph steps through ``sysmo.evals.trace_view.graph_steps`` (LangGraph's checkpoint file), its diffs
and line-anchored diagnostics through the helpers ``sysmo trace`` uses. Replace this module to feed the pages
from another source (a typed event stream of attempts); the pages only know the view models.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sysmo.contracts.arms import ARM_FACTORS, expand_arms, factor_values, short_label
from sysmo.contracts.artifact import Artifact
from sysmo.errors import StorageError, SysmoError
from sysmo.evals.error_kinds import error_kind
from sysmo.contracts.scorecard import ScoreCard, StageResult
from sysmo.evals.tables import experiment_settings, settings_lines
from sysmo.evals.trace_view import diagnostics_by_line, graph_steps
from sysmo.contracts.attempt import Attempt, Round
from sysmo.store import Store
from sysmo.view.models import (
    FILTER_FIELDS,
    SORT_FIELDS,
    AttemptFilters,
    AttemptRow,
    AttemptView,
    ForkView,
    BoardCell,
    CheckView,
    DetailTable,
    DiffRow,
    ExperimentSummary,
    FileDiff,
    FileListing,
    GraphStepView,
    GroupSummary,
    Leaderboard,
    ListingLine,
    LlmCallView,
    MessageView,
    ModelCallView,
    ReportView,
    RoundView,
    StageView,
    TimelineEvent,
)

STORE_FILE = "results.sqlite"
DIFF_CONTEXT = 3  # unchanged lines shown around each change of a side-by-side diff
DETAIL_TEXT_LIMIT = 20_000  # characters of a stage's leftover detail shown as JSON


# ---------------------------------------------------------------------------------------------- experiments
def experiment_dirs(runs_dir: Path) -> dict[str, Path]:
    """The experiment folders of a runs directory (those with a store), by id; ``runs_dir`` may be one itself."""
    runs_dir = Path(runs_dir)
    if (runs_dir / STORE_FILE).is_file():
        return {runs_dir.name: runs_dir}
    if not runs_dir.is_dir():
        return {}
    return {d.name: d for d in sorted(runs_dir.iterdir()) if (d / STORE_FILE).is_file()}


def open_store(runs_dir: Path, experiment_id: str) -> Store:
    """The store of one experiment of the runs directory (only ids that are folders there: no path from a URL)."""
    directory = experiment_dirs(runs_dir).get(experiment_id)
    if directory is None:
        raise SysmoError(f"no experiment {experiment_id!r} in {runs_dir}")
    return Store(directory / STORE_FILE)


def run_label(is_control: bool, models: Iterable[str]) -> str:
    """CONTROL (offline providers), REPLAY (recorded answers played back) or LIVE (real models were called)."""
    models = list(models)
    if models and all(m.startswith("replay") for m in models):
        return "REPLAY"
    return "CONTROL" if is_control else "LIVE"


def _isolation(store: Store, experiment_id: str, environment: dict[str, Any]) -> str:
    """How the tools ran, as their checks recorded it (``details.isolation`` per tool), else the environment's."""
    rows = store.query(
        "SELECT DISTINCT json_extract(r.check_json, '$.tool') AS tool, "
        "json_extract(r.check_json, '$.details.isolation') AS isolation FROM rounds r "
        "JOIN attempts a ON a.id = r.attempt_id WHERE a.experiment_id=? AND r.check_json IS NOT NULL", (experiment_id,))
    seen: dict[str, set[str]] = {}
    for r in rows:
        if r["isolation"]:
            value = json.loads(r["isolation"]) if r["isolation"].startswith("[") else r["isolation"]
            seen.setdefault(r["tool"] or "tool", set()).add("+".join(value) if isinstance(value, list) else str(value))
    if seen:
        return "; ".join(f"{tool}: {', '.join(sorted(v))}" for tool, v in sorted(seen.items()))
    value = environment.get("isolation") or environment.get("sandbox")
    if value:
        return value if isinstance(value, str) else json.dumps(value)
    return "not recorded"


def experiment_summary(store: Store, experiment_id: str) -> ExperimentSummary:
    record = store.experiment(experiment_id)
    rows = attempt_rows(store, experiment_id)
    kinds: dict[str, int] = {}
    for r in rows:
        if r.error_kind:
            kinds[r.error_kind] = kinds.get(r.error_kind, 0) + 1
    models = sorted({r.model for r in rows}) or [str(m if isinstance(m, str) else m.get("model"))
                                                   for m in record["config"].get("models") or []]
    return ExperimentSummary(
        id=experiment_id, status=record.get("status") or "", created_at=record.get("created_at"),
        updated_at=record.get("updated_at"), label=run_label(bool(record.get("is_control")), models),
        attempts=len(rows), passed=sum(r.status == "passed" for r in rows),
        failed=sum(r.status == "failed" for r in rows), errors=sum(r.status == "error" for r in rows),
        error_kinds=kinds, cost_usd=sum(r.cost_usd for r in rows), unpriced_models=store.unpriced_models(experiment_id),
        tokens=sum(r.tokens for r in rows),
        agents=sorted({r.agent for r in rows}), models=models,
        isolation=_isolation(store, experiment_id, record.get("environment") or {}),
        settings=settings_lines(experiment_settings(store, experiment_id)),
        arms=len(expand_arms({name: factor_values(name, record["config"].get(name, factor.default))
                              for name, factor in ARM_FACTORS.items()})))


def experiments(runs_dir: Path) -> list[ExperimentSummary]:
    out = []
    for experiment_id, directory in experiment_dirs(runs_dir).items():
        store = Store(directory / STORE_FILE)
        try:
            out.append(experiment_summary(store, experiment_id))
        except StorageError:
            raise  # a full or read-only disk is the page's news, not a reason to leave the experiment out
        except SysmoError:
            continue  # a store without its experiment record (a run that never started)
        finally:
            store.close()
    return sorted(out, key=lambda e: e.updated_at or "", reverse=True)


# ---------------------------------------------------------------------------------------------- attempts
def _failed_stage(scorecard_json: str | None) -> str:
    if not scorecard_json:
        return ""
    card = ScoreCard.model_validate_json(scorecard_json)
    # a stage skipped for want of a judge or traces did not fail; a gated skip (an earlier stage failed) did
    return next((s.stage for s in card.stages if not s.passed and (s.outcome != "skipped" or s.detail.get("gated"))), "")


def attempt_rows(store: Store, experiment_id: str) -> list[AttemptRow]:
    rows = store.query(
        "SELECT a.id, a.task_id, a.kind, a.agent, a.model, a.sample_index, a.status, a.n_rounds, a.cost_usd, "
        "a.prompt_tokens, a.completion_tokens, a.duration_s, a.error, a.parent_attempt_id, a.arm, s.scorecard_json "
        "FROM attempts a "
        "LEFT JOIN scores s ON s.attempt_id = a.id WHERE a.experiment_id=? "
        "ORDER BY a.task_id, a.agent, a.model, a.sample_index, a.arm", (experiment_id,))
    # the arm column names only the settings the arms vary (an experiment of one arm leaves it empty)
    labels = {r["arm"] for r in rows if r["arm"]}
    varied = [name for name in ARM_FACTORS
              if len({part for label in labels for part in label.split(",") if part.startswith(f"{name}=")}) > 1]
    return [AttemptRow(
        arm=short_label(r["arm"], varied) if r["arm"] and varied else "",
        id=r["id"], experiment_id=experiment_id, task_id=r["task_id"], kind=r["kind"] or "", agent=r["agent"],
        model=r["model"], sample_index=r["sample_index"] or 0, status=r["status"], failed_stage=_failed_stage(r["scorecard_json"]),
        rounds=r["n_rounds"] or 0, cost_usd=r["cost_usd"] or 0.0,
        tokens=(r["prompt_tokens"] or 0) + (r["completion_tokens"] or 0), duration_s=r["duration_s"] or 0.0,
        error=r["error"] or "", error_kind=error_kind(r["status"], r["error"]) or "",
        parent_attempt_id=r["parent_attempt_id"]) for r in rows]


def filter_values(rows: list[AttemptRow]) -> dict[str, list[str]]:
    """The values each filter can take in these rows (for the filter menus)."""
    field = {"task": "task_id"}
    return {f: sorted({str(getattr(r, field.get(f, f))) for r in rows} - {""}) for f in FILTER_FIELDS}


def apply_filters(rows: list[AttemptRow], filters: AttemptFilters) -> list[AttemptRow]:
    field = {"task": "task_id"}
    out = [r for r in rows if all(str(getattr(r, field.get(k, k))) == v for k, v in filters.active().items())]
    key = filters.sort if filters.sort in SORT_FIELDS else "task_id"
    return sorted(out, key=lambda r: (getattr(r, key), r.task_id, r.agent, r.model, r.sample_index),
                  reverse=filters.desc)


def group_summaries(rows: list[AttemptRow]) -> list[GroupSummary]:
    """Counts and rates per (agent, model, kind), forks left out as in the report (not samples of the plan)."""
    groups: dict[tuple[str, str, str], list[AttemptRow]] = {}
    for r in rows:
        if r.parent_attempt_id:
            continue
        groups.setdefault((r.agent, r.model, r.kind), []).append(r)
    out = []
    for (agent, model, kind), members in sorted(groups.items()):
        passed = sum(r.status == "passed" for r in members)
        errors = sum(r.status == "error" for r in members)
        ran = len(members) - errors
        out.append(GroupSummary(
            agent=agent, model=model, kind=kind, attempts=len(members), passed=passed,
            failed=sum(r.status == "failed" for r in members), errors=errors,
            infrastructure_errors=sum(r.error_kind == "infrastructure" for r in members),
            pass_rate=passed / len(members), pass_rate_without_errors=passed / ran if ran else None,
            mean_rounds=sum(r.rounds for r in members) / len(members), cost_usd=sum(r.cost_usd for r in members)))
    return out


# ---------------------------------------------------------------------------------------------- one attempt
def side_by_side(before: Artifact | None, after: Artifact | None) -> list[FileDiff]:
    """Each file that changed between two rounds' artifacts, as aligned left/right rows."""
    if after is None or before is None:
        return []
    out = []
    for name in sorted(set(before.files) | set(after.files)):
        a, b = before.files.get(name, "").splitlines(), after.files.get(name, "").splitlines()
        if a == b:
            continue
        rows: list[DiffRow] = []
        opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        for n, (tag, i1, i2, j1, j2) in enumerate(opcodes):
            if tag == "equal" and i2 - i1 > 2 * DIFF_CONTEXT + 1:  # fold unchanged lines, keep some context
                head = 0 if n == 0 else DIFF_CONTEXT
                tail = 0 if n == len(opcodes) - 1 else DIFF_CONTEXT
                rows.extend(DiffRow(tag="equal", left_number=i1 + k + 1, left=a[i1 + k], right_number=j1 + k + 1,
                                    right=b[j1 + k]) for k in range(head))
                rows.append(DiffRow(tag="skip", left=f"... {i2 - i1 - head - tail} unchanged lines ..."))
                rows.extend(DiffRow(tag="equal", left_number=i2 - tail + k + 1, left=a[i2 - tail + k],
                                    right_number=j2 - tail + k + 1, right=b[j2 - tail + k]) for k in range(tail))
                continue
            for k in range(max(i2 - i1, j2 - j1)):
                li, rj = i1 + k, j1 + k
                rows.append(DiffRow(tag=tag,
                                    left_number=li + 1 if li < i2 else None, left=a[li] if li < i2 else "",
                                    right_number=rj + 1 if rj < j2 else None, right=b[rj] if rj < j2 else ""))
        out.append(FileDiff(name=name, rows=rows))
    return out


def listings(rnd: Round) -> list[FileListing]:
    if rnd.artifact is None:
        return []
    marks = diagnostics_by_line(rnd.artifact, rnd.check)
    out = []
    for name, body in rnd.artifact.files.items():
        lines = body.splitlines()
        out.append(FileListing(
            name=name, lines=[ListingLine(number=n, text=t, diagnostics=marks.get((name, n), []))
                              for n, t in enumerate(lines, 1)],
            unplaced=[f"(line {n}) {m}" for (f, n), msgs in marks.items() if f == name and n > len(lines) for m in msgs]))
    return out


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "\n".join(p.get("text", json.dumps(p)) if isinstance(p, dict) else str(p) for p in value)
    return json.dumps(value, indent=2, default=str)


def _check_view(rnd: Round) -> CheckView | None:
    c = rnd.check
    if c is None:
        return None
    return CheckView(tool=c.tool, tool_version=c.tool_version, outcome=c.outcome.value, duration_s=c.duration_s,
                     diagnostics=[d.render() for d in c.diagnostics],
                     details=json.dumps(c.details, indent=2, default=str)[:DETAIL_TEXT_LIMIT] if c.details else "")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    return "" if value is None else str(value)


def _records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _nested_tables(key: str, value: dict[str, Any]) -> list[DetailTable]:
    """A record holding lists of records (a trace mapping: actions, variables, notes): one table per list, and its
    other entries as a two-column table."""
    tables, flat = [], []
    for name, item in value.items():
        if _records(item):
            columns = list(dict.fromkeys(k for v in item for k in v))
            tables.append(DetailTable(title=f"{key}: {name}", columns=columns,
                                      rows=[[_cell(v.get(c)) for c in columns] for v in item]))
        else:
            flat.append([str(name), _cell(item)])
    return [DetailTable(title=key, columns=["key", "value"], rows=flat), *tables] if flat else tables


def stage_view(stage: StageResult) -> StageView:
    """A stage with its detail split into scalars, tables (lists of records: alignments, error traces) and the
    rest as JSON."""
    scalars: dict[str, str] = {}
    tables: list[DetailTable] = []
    rest: dict[str, Any] = {}
    for key, value in stage.detail.items():
        if isinstance(value, (str, int, float, bool)) or value is None:
            scalars[key] = _cell(value)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            columns = list(dict.fromkeys(k for v in value for k in v))
            tables.append(DetailTable(title=key, columns=columns,
                                      rows=[[_cell(v.get(c)) for c in columns] for v in value]))
        elif isinstance(value, dict) and value and all(not isinstance(v, (dict, list)) for v in value.values()):
            # a flat mapping (an alignment: reference name -> candidate name) as a two-column table
            tables.append(DetailTable(title=key, columns=["key", "value"], rows=[[str(k), _cell(v)] for k, v in value.items()]))
        elif isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
            tables.append(DetailTable(title=key, columns=[key], rows=[[_cell(v)] for v in value]))
        elif isinstance(value, dict) and value and any(_records(v) for v in value.values()):
            tables += _nested_tables(key, value)  # e.g. a trace mapping: its events and its fields as tables
        else:
            rest[key] = value
    return StageView(stage=stage.stage, value=stage.value, passed=stage.passed, outcome=stage.outcome,
                     metrics=stage.metrics, skipped_because=stage.skipped_because, provenance=stage.provenance,
                     duration_s=stage.duration_s, scalars=scalars, tables=tables,
                     other=json.dumps(rest, indent=2, default=str)[:DETAIL_TEXT_LIMIT] if rest else "")


def _step_event(step: GraphStepView, round_index: int | None) -> TimelineEvent:
    return TimelineEvent(kind="graph_step", round_index=round_index, label=f"step {step.step}: {step.node or 'input'}",
                         detail=f"next: {', '.join(step.next) or 'end'}; checkpoint {step.checkpoint_id}",
                         anchor=f"step-{step.step}")


def _timeline(rounds: list[RoundView], steps: list[GraphStepView], attempt: Attempt) -> list[TimelineEvent]:
    """Every event in order: each graph step, followed by the model calls made for it (a call's purpose names
    its node) and, after the check step, the tool's verdict; the rest of a round's events close the round."""
    placed = {s.checkpoint_id for r in rounds for s in r.graph_steps}
    events = [_step_event(s, None) for s in steps if s.checkpoint_id not in placed and not s.node]
    for rnd in rounds:
        calls = [TimelineEvent(
            kind="llm_call", round_index=rnd.index, label=f"{call.role} · {call.purpose or 'call'} · {call.model}",
            detail=f"{call.prompt_tokens}+{call.completion_tokens} tokens, ${call.cost_usd:.4f}, "
                   f"{call.latency_s:.2f} s{' (cached)' if call.cached else ''}",
            anchor=f"round-{rnd.index}-call-{seq}") for seq, call in enumerate(rnd.llm_calls)]
        purposes = [call.purpose for call in rnd.llm_calls]
        check = [] if rnd.check is None else [TimelineEvent(
            kind="tool_check", round_index=rnd.index, label=f"{rnd.check.tool} {rnd.check.tool_version}: {rnd.check.outcome}",
            detail=f"{len(rnd.check.diagnostics)} diagnostics, {rnd.check.duration_s:.2f} s",
            anchor=f"round-{rnd.index}-check")]
        done: set[int] = set()
        nodes = {step.node for step in rnd.graph_steps}
        for step in rnd.graph_steps:
            events.append(_step_event(step, rnd.index))
            for i, purpose in enumerate(purposes):  # calls named after no node of the round come from `generate`
                if i not in done and (purpose == step.node or (step.node == "generate" and purpose not in nodes)):
                    events.append(calls[i])
                    done.add(i)
            if step.node == "check" and check:
                events.extend(check)
                check = []
        events.extend(c for i, c in enumerate(calls) if i not in done)
        events.extend(check)
        for problem in (rnd.extraction_error, rnd.error):
            if problem:
                events.append(TimelineEvent(kind="error", round_index=rnd.index, label=problem, anchor=f"round-{rnd.index}"))
    events.extend(_step_event(s, s.round_index) for s in steps if s.checkpoint_id not in placed and s.node)
    if attempt.error:
        events.append(TimelineEvent(kind="error", round_index=None, label=attempt.error, anchor="attempt-error"))
    return events


def model_calls(store: Store, attempt_id: str) -> list[ModelCallView]:
    """Every model call the attempt's event stream holds (its run, then its scoring), with prompt and reply."""
    calls: list[ModelCallView] = []
    for stage in ("attempt", "score"):
        for event in store.events(attempt_id, stage=stage):
            if getattr(event, "type", None) != "llm_call":
                continue
            calls.append(ModelCallView(
                seq=event.seq or 0, stage=stage, role=event.role, purpose=event.purpose or "", round=event.round,
                model=event.model, tokens=f"{event.prompt_tokens}+{event.completion_tokens}",
                spend=f"${event.spend_usd:.4f}" + (" (cached)" if event.cached else ""),
                messages=[MessageView(role=str(m.get("role", "")), content=_content(m.get("content", "")))
                          for m in event.messages],
                reply=event.text, error=f"{event.error_type}: {event.error}" if event.error else ""))
    return calls


def attempt_view(store: Store, attempt_id: str) -> AttemptView:
    attempt = store.attempt(attempt_id)
    experiment_id = store.query("SELECT experiment_id FROM attempts WHERE id=?", (attempt.id,))[0]["experiment_id"]
    all_rows = attempt_rows(store, experiment_id)
    row = next(r for r in all_rows if r.id == attempt.id)
    card = store.scorecard(attempt.id)
    steps = [GraphStepView(**s.model_dump()) for s in graph_steps(attempt, store.path.parent)]
    # a step belongs to the round its state was in when the step ran (the round index it started from)
    step_round: dict[str, int | None] = {}
    previous_round: int | None = None
    for s in steps:
        step_round[s.checkpoint_id] = previous_round if s.node else None
        previous_round = s.round_index
    rounds: list[RoundView] = []
    previous: Artifact | None = None
    for rnd in attempt.rounds:
        rounds.append(RoundView(
            index=rnd.index, kind=rnd.kind, duration_s=rnd.duration_s,
            messages=[MessageView(role=str(m.get("role", "")), content=_content(m.get("content", ""))) for m in rnd.messages],
            response=rnd.response,
            llm_calls=[LlmCallView(role=c.role, purpose=c.purpose, model=c.model, prompt_tokens=c.prompt_tokens,
                                   completion_tokens=c.completion_tokens, cost_usd=c.cost_usd, latency_s=c.latency_s,
                                   cached=c.cached) for c in rnd.llm_calls],
            check=_check_view(rnd), listings=listings(rnd), diffs=side_by_side(previous, rnd.artifact),
            extraction_error=rnd.extraction_error, extraction_notes=rnd.extraction_notes, error=rnd.error,
            graph_steps=[s for s in steps if s.node and step_round.get(s.checkpoint_id) == rnd.index]))
        previous = rnd.artifact or previous
    return AttemptView(
        row=row, is_control=attempt.is_control, max_rounds=attempt.max_rounds, arm=attempt.arm_label,
        seed=attempt.seed, time_limit_s=attempt.time_limit_s, started_at=attempt.started_at,
        checkpoint_db=attempt.checkpoint_db, rounds=rounds, timeline=_timeline(rounds, steps, attempt), graph_steps=steps,
        stages=[stage_view(s) for s in card.stages] if card else [], cascade=card.cascade if card else None,
        extras=json.dumps(attempt.extras, indent=2, default=str)[:DETAIL_TEXT_LIMIT] if attempt.extras else "",
        final_files=dict(attempt.final_artifact.files) if attempt.final_artifact else {},
        siblings=[r for r in all_rows if r.task_id == attempt.task_id and r.id != attempt.id],
        model_calls=model_calls(store, attempt.id),
        fork=ForkView(parent_attempt_id=attempt.parent_attempt_id, forked_at=attempt.forked_at,
                      forked_at_step=attempt.forked_at_step, inherited_rounds=attempt.inherited_rounds,
                      changes=attempt.fork_changes) if attempt.parent_attempt_id else None,
        forks=[r for r in all_rows if r.id in set(store.forks_of(attempt.id))])


# ---------------------------------------------------------------------------------------------- report
def report_view(store: Store, experiment_id: str) -> ReportView:
    """The leaderboards of ``sysmo report`` (``sysmo.evals.leaderboard``), with links to the attempt table."""
    import pandas as pd

    from sysmo.evals.leaderboard import errored_groups_note, leaderboards, metric_lines
    from sysmo.evals.report import report_notes
    from sysmo.evals.tables import attempts_frame, summary_frame

    config = store.experiment(experiment_id)["config"]
    frame = attempts_frame(store, experiment_id)
    summary = summary_frame(frame, config.get("selection_metric"), ks=(1, 3, config.get("samples") or 5))
    boards = leaderboards(summary, frame)
    out = []
    for kind, table in boards.items():
        rows = []
        for record in table.to_dict(orient="records"):
            group = {"agent": str(record["agent"]), "model": str(record["model"]), "kind": kind}
            cells = []
            for col in table.columns:
                value = record[col]
                text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else (
                    f"{value:.3f}" if isinstance(value, float) else str(value))
                query: dict[str, str] | None = None
                if col in ("agent", "model", "samples"):
                    query = group
                elif col.startswith("pass@1"):
                    query = {**group, "status": "passed"}
                elif col == "errors":
                    query = {**group, "status": "error"}
                cells.append(BoardCell(text=text, query=query))
            rows.append(cells)
        out.append(Leaderboard(kind=kind, columns=[str(c) for c in table.columns], rows=rows))
    return ReportView(boards=out, metric_lines=metric_lines(boards), errored_note=errored_groups_note(frame),
                      notes=report_notes(store, experiment_id))
