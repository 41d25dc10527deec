"""Turns what the experiment store holds into the view models of ``sysmo view`` (``sysmo.view.models``).

The one place that reads data for the viewer: experiments and attempts through ``sysmo.store.Store``, an
attempt's graph steps through ``sysmo.evals.trace_view.graph_steps`` (LangGraph's checkpoint file), its diffs
and line-anchored diagnostics through the helpers ``sysmo trace`` uses. Replace this module to feed the pages
from another source (a typed event stream of attempts); the pages only know the view models.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sysmo.contracts.arms import ARM_FACTORS, expand_arms, factor_values, short_label
from sysmo.contracts.artifact import Artifact
from sysmo.errors import StorageError, SysmoError
from sysmo.evals.error_kinds import error_kind
from sysmo.contracts.scorecard import StageResult
from sysmo.evals.tables import experiment_settings, settings_lines
from sysmo.evals.trace_view import diagnostics_by_line, graph_steps
from sysmo.llm.sent import dropped_text, received_text, requested_text
from sysmo.contracts.attempt import Attempt, Round
from sysmo.log import get_logger
from sysmo.store import Store, StoreError
from sysmo.view.models import (
    FILTER_FIELDS,
    SORT_FIELDS,
    ArmRate,
    AttemptFilters,
    AttemptRow,
    AttemptView,
    BreakdownTable,
    ForkView,
    BoardCell,
    BoardColumn,
    MatrixCell,
    PairedTable,
    Plot,
    TaskMatrix,
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
    Outcome,
    ReportView,
    RoundView,
    SideSetting,
    StageView,
    StateChange,
    StepPair,
    ToolCallView,
    TimelineEvent,
    TimeSplit,
)

log = get_logger(__name__)

STORE_FILE = "results.sqlite"
DIFF_CONTEXT = 3  # unchanged lines shown around each change of a side-by-side diff
DETAIL_TEXT_LIMIT = 20_000  # characters of a stage's leftover detail shown as JSON
PAGE_SIZE = 50  # attempts per page of the attempt table
STATE_TEXT_LIMIT = 8_000  # characters of a checkpoint's state shown
CHANGE_TEXT_LIMIT = 1_500  # characters of one changed state value shown in a step's diff
SHORT_ID = 8  # characters of a checkpoint id shown (more when 8 do not tell the attempt's steps apart)


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
    return "no tool check stored yet" if not rows else "not recorded"


def experiment_summary(store: Store, experiment_id: str, rows: list[AttemptRow] | None = None) -> ExperimentSummary:
    record = store.experiment(experiment_id)
    every = attempt_rows(store, experiment_id) if rows is None else rows
    rows = [r for r in every if not r.parent_attempt_id]  # the plan's attempts; forks are counted apart
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
        # before any attempt is stored (a run just started) the run's settings name them
        agents=sorted({r.agent for r in rows}) or [str(a) for a in record["config"].get("agents") or []], models=models,
        isolation=_isolation(store, experiment_id, record.get("environment") or {}),
        settings=settings_lines(experiment_settings(store, experiment_id)),
        planned=(record.get("environment") or {}).get("planned_attempts"), forks=len(every) - len(rows),
        arms=len(expand_arms({name: factor_values(name, record["config"].get(name, factor.default))
                              for name, factor in ARM_FACTORS.items()})),
        arm_rates=arm_rates(rows))


def arm_rates(rows: list[AttemptRow]) -> list[ArmRate]:
    """Each arm's passed / attempts (forks left out), when the rows hold more than one arm (else none: the
    experiment's own rate is its arm's)."""
    by_arm: dict[str, list[AttemptRow]] = {}
    for r in rows:
        if not r.parent_attempt_id:
            by_arm.setdefault(r.arm, []).append(r)
    if len(by_arm) < 2:
        return []
    return [ArmRate(arm=arm, attempts=len(members), passed=sum(r.status == "passed" for r in members))
            for arm, members in sorted(by_arm.items(), key=lambda item: arm_order(item[0]))]


def arm_order(arm: str) -> tuple[tuple[int, float, str], ...]:
    """How arms are listed: each factor's levels in the paired analysis' order (feedback none, bare, diagnostics,
    full; strategy default first; numbers ascending), not alphabetically."""
    from sysmo.evals.paired import DECLARED_ORDER

    key = []
    for part in arm.split(",") if arm else []:
        name, _, value = part.partition("=")
        declared = DECLARED_ORDER.get(name, ())
        try:
            number = float(value)
        except ValueError:
            number = float("inf")
        key.append((declared.index(value) if value in declared else len(declared), number, value))
    return tuple(key)


def experiments(runs_dir: Path, summary: Any = None) -> list[ExperimentSummary]:
    """Every experiment's summary (``summary(store, id)`` computes one: the app passes its cached one); one whose
    store cannot be read is listed beside the others, marked with why (``ExperimentSummary.unreadable``)."""
    summary = summary or experiment_summary
    out = []
    for experiment_id, directory in experiment_dirs(runs_dir).items():
        try:
            store = Store(directory / STORE_FILE)
        except (SysmoError, sqlite3.Error) as exc:  # not a database, or a disk that will not open it
            out.append(_unreadable(experiment_id, directory, exc))
            continue
        try:
            out.append(summary(store, experiment_id))
        except (StoreError, StorageError, sqlite3.Error, ValueError) as exc:  # damaged rows or JSON, a failing disk
            out.append(_unreadable(experiment_id, directory, exc))
        except SysmoError:
            continue  # a store without its experiment record (a run that never started)
        finally:
            store.close()
    return sorted(out, key=lambda e: e.updated_at or "", reverse=True)


def _unreadable(experiment_id: str, directory: Path, exc: BaseException) -> ExperimentSummary:
    """The index's line for an experiment whose store cannot be read: its id, when its store last changed, and why."""
    log.warning("view.store_unreadable", experiment=experiment_id, error=f"{type(exc).__name__}: {exc}"[:300])
    try:
        changed = datetime.fromtimestamp((directory / STORE_FILE).stat().st_mtime, UTC).isoformat(timespec="seconds")
    except OSError:
        changed = None
    why = str(exc) if isinstance(exc, SysmoError) else f"{type(exc).__name__}: {exc}"
    return ExperimentSummary(id=experiment_id, status="unreadable", label="", updated_at=changed,
                             unreadable=why[:500])


# ---------------------------------------------------------------------------------------------- attempts
def _card_stages(scorecard_json: str | None) -> list[dict[str, Any]]:
    """The stages of a stored scorecard as plain dicts (json, not pydantic: the attempt table parses hundreds)."""
    return json.loads(scorecard_json).get("stages", []) if scorecard_json else []


def _failed_stage(stages: list[dict[str, Any]]) -> str:
    # a stage skipped for want of a judge or traces did not fail; a gated skip (an earlier stage failed) did
    return next((s["stage"] for s in stages if not s.get("passed") and (
        s.get("outcome") != "skipped" or (s.get("detail") or {}).get("gated"))), "")


def not_scored_reason(stage: dict[str, Any]) -> str | None:
    """Why a stage has no score (None when it has one): skipped for a reason of its own or after an earlier
    stage failed. Such a stage shows as "—", never as 0."""
    if stage.get("outcome") != "skipped":
        return None
    why = stage.get("skipped_because") or "no reason given"
    if (stage.get("detail") or {}).get("gated"):
        return f"not scored: {why} (the cascade stopped; the report's means count it as 0)"
    return f"not scored: {why}"


def varied_factors(labels: Iterable[str | None]) -> list[str]:
    """The arm factors whose value differs between the arm ``labels``: the arm column names only these (an
    experiment of one arm leaves it empty)."""
    known = {label for label in labels if label}
    return [name for name in ARM_FACTORS
            if len({part for label in known for part in label.split(",") if part.startswith(f"{name}=")}) > 1]


def attempt_rows(store: Store, experiment_id: str) -> list[AttemptRow]:
    rows = store.query(
        "SELECT a.id, a.task_id, a.kind, a.agent, a.model, a.sample_index, a.status, a.n_rounds, a.cost_usd, "
        "a.prompt_tokens, a.completion_tokens, a.duration_s, a.error, a.parent_attempt_id, a.arm, s.scorecard_json "
        "FROM attempts a "
        "LEFT JOIN scores s ON s.attempt_id = a.id WHERE a.experiment_id=? "
        "ORDER BY a.task_id, a.agent, a.model, a.sample_index, a.arm", (experiment_id,))
    varied = varied_factors(r["arm"] for r in rows)
    out = []
    for r in rows:
        stages = _card_stages(r["scorecard_json"])
        reasons = {s["stage"]: why for s in stages if (why := not_scored_reason(s))}
        out.append(AttemptRow(
            arm=short_label(r["arm"], varied) if r["arm"] and varied else "",
            id=r["id"], experiment_id=experiment_id, task_id=r["task_id"], kind=r["kind"] or "", agent=r["agent"],
            model=r["model"], sample_index=r["sample_index"] or 0, status=r["status"], failed_stage=_failed_stage(stages),
            rounds=r["n_rounds"] or 0, cost_usd=r["cost_usd"] or 0.0,
            tokens=(r["prompt_tokens"] or 0) + (r["completion_tokens"] or 0), duration_s=r["duration_s"] or 0.0,
            error=r["error"] or "", error_kind=error_kind(r["status"], r["error"]) or "",
            parent_attempt_id=r["parent_attempt_id"],
            scores={s["stage"]: None if s["stage"] in reasons else s.get("value") for s in stages},
            not_scored=reasons))
    return out


def stage_columns(rows: list[AttemptRow]) -> list[str]:
    """Every stage the rows were scored on, each kind's in its cascade's order (``leaderboard.STAGE_ORDER``)."""
    from sysmo.evals.leaderboard import STAGE_ORDER

    seen = list(dict.fromkeys(stage for r in rows for stage in r.scores))
    known = [stage for order in STAGE_ORDER.values() for stage in order]
    return sorted(seen, key=lambda stage: known.index(stage) if stage in known else len(known))


def view_stages(rows: list[AttemptRow], shown: list[AttemptRow]) -> list[str]:
    """The score columns of the attempt table: the stages of the task kinds among the ``shown`` rows only."""
    kinds = {r.kind for r in shown}
    return stage_columns([r for r in rows if r.kind in kinds])


def short_task(task_id: str) -> str:
    """A task id without its benchmark and kind (``starter/uml_class/library_loans`` -> ``library_loans``)."""
    return task_id.rsplit("/", 1)[-1] or task_id


def search_ids(store: Store, experiment_id: str, text: str) -> set[str]:
    """The attempts whose task, agent, model, error, prompts, replies or diagnostics contain ``text`` (any case)."""
    like = f"%{text}%"
    found = store.query(
        "SELECT id FROM attempts WHERE experiment_id=? AND (task_id LIKE ? OR agent LIKE ? OR model LIKE ? "
        "OR error LIKE ? OR id LIKE ?)", (experiment_id, like, like, like, like, like))
    found += store.query(
        "SELECT DISTINCT r.attempt_id AS id FROM rounds r JOIN attempts a ON a.id = r.attempt_id "
        "WHERE a.experiment_id=? AND (r.prompt_json LIKE ? OR r.response LIKE ? OR r.check_json LIKE ? "
        "OR r.extraction_error LIKE ? OR r.error LIKE ?)", (experiment_id, like, like, like, like, like))
    return {r["id"] for r in found}


def filter_values(rows: list[AttemptRow]) -> dict[str, list[str]]:
    """The values each filter can take in these rows (for the filter menus)."""
    field = {"task": "task_id"}
    return {f: sorted({str(getattr(r, field.get(f, f))) for r in rows} - {""}) for f in FILTER_FIELDS}


def apply_filters(rows: list[AttemptRow], filters: AttemptFilters, found: set[str] | None = None) -> list[AttemptRow]:
    """The rows the filters (and the search's ``found`` ids, when searching) keep, in the chosen order; a stage
    not scored sorts last either way."""
    field = {"task": "task_id"}
    out = [r for r in rows if all(str(getattr(r, field.get(k, k))) == v for k, v in filters.active().items())
           and (found is None or r.id in found)]
    tie = lambda r: (r.task_id, r.agent, r.model, r.sample_index)  # noqa: E731
    if filters.sort.startswith("score:"):
        stage = filters.sort[len("score:"):]
        scored = sorted((r for r in out if r.scores.get(stage) is not None),
                        key=lambda r: (r.scores[stage], *tie(r)), reverse=filters.desc)
        return scored + [r for r in out if r.scores.get(stage) is None]
    key = filters.sort if filters.sort in SORT_FIELDS else "task_id"
    return sorted(out, key=lambda r: (getattr(r, key), *tie(r)), reverse=filters.desc)


def page_of(rows: list[AttemptRow], page: int, size: int = PAGE_SIZE) -> tuple[list[AttemptRow], int]:
    """One page of the rows and how many pages there are (a page past the end shows the last)."""
    pages = max(1, -(-len(rows) // size))
    page = min(page, pages)
    return rows[(page - 1) * size: page * size], pages


def attempts_csv(rows: list[AttemptRow], stages: list[str]) -> str:
    """The rows as CSV, one column per stage; a stage not scored is an empty cell (never 0)."""
    out = io.StringIO()
    fields = ["id", "task_id", "kind", "agent", "model", "sample_index", "arm", "status", "failed_stage", "rounds",
              "cost_usd", "tokens", "duration_s", "error_kind", "error"]
    writer = csv.writer(out)
    writer.writerow(fields + [f"score.{s}" for s in stages])
    for r in rows:
        values = [getattr(r, f) for f in fields]
        writer.writerow(values + ["" if r.scores.get(s) is None else f"{r.scores[s]:.6g}" for s in stages])
    return out.getvalue()


def group_summaries(rows: list[AttemptRow]) -> list[GroupSummary]:
    """Counts and rates per (agent, model, kind, arm), forks left out as in the report (not samples of the plan):
    the arms of an experiment are never averaged together."""
    groups: dict[tuple[str, str, str, str], list[AttemptRow]] = {}
    for r in rows:
        if r.parent_attempt_id:
            continue
        groups.setdefault((r.agent, r.model, r.kind, r.arm), []).append(r)
    out = []
    for (agent, model, kind, arm), members in sorted(groups.items(),
                                                     key=lambda item: (*item[0][:3], arm_order(item[0][3]))):
        passed = sum(r.status == "passed" for r in members)
        errors = sum(r.status == "error" for r in members)
        ran = len(members) - errors
        out.append(GroupSummary(
            agent=agent, model=model, kind=kind, arm=arm, attempts=len(members), passed=passed,
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
    return files_diff(before.files, after.files)


def files_diff(before: dict[str, str], after: dict[str, str]) -> list[FileDiff]:
    """Each file that differs between two sets of files, as aligned left/right rows (difflib's opcodes)."""
    out = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name, "").splitlines(), after.get(name, "").splitlines()
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
    if value is None:  # an assistant turn made only of tool calls
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "\n".join(p.get("text", json.dumps(p)) if isinstance(p, dict) else str(p) for p in value)
    return json.dumps(value, indent=2, default=str)


def _arguments_text(arguments: Any) -> str:
    """A tool call's arguments, one per line, a text argument as it is (a file's content keeps its lines)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return arguments  # malformed JSON the model sent: shown as sent
    if not isinstance(arguments, dict):
        return "" if arguments is None else json.dumps(arguments, default=str)
    return "\n".join(f"{k} = {v}" if isinstance(v, str) else f"{k} = {json.dumps(v, default=str)}"
                     for k, v in arguments.items())


def tool_call_view(call: Any) -> ToolCallView:
    """A tool call in either stored shape: a chat message's (``{"function": {"name", "arguments": "<json>"}}``)
    or a reply's (``{"name", "arguments": {...}}``)."""
    if not isinstance(call, dict):
        return ToolCallView(name=str(call), arguments="")
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    return ToolCallView(name=str(function.get("name") or call.get("name") or "?"), id=str(call.get("id") or ""),
                        arguments=_arguments_text(function.get("arguments") if function else call.get("arguments")))


def message_view(message: dict[str, Any]) -> MessageView:
    """A chat message: its text ("" when it has none, never "null"), its tool calls, the call a tool result answers."""
    calls = message.get("tool_calls") or []
    return MessageView(role=str(message.get("role", "")), content=_content(message.get("content", "")),
                       tool_calls=[tool_call_view(c) for c in calls] if isinstance(calls, list) else [],
                       tool_call_id=str(message.get("tool_call_id") or ""))


def _check_view(rnd: Round) -> CheckView | None:
    c = rnd.check
    if c is None:
        return None
    return CheckView(tool=c.tool, tool_version=c.tool_version, outcome=c.outcome.value, duration_s=c.duration_s,
                     diagnostics=[d.render() for d in c.diagnostics], cached=bool(c.details.get("cached")),
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
    return TimelineEvent(kind="graph_step", round_index=round_index, label=f"step {step.step}: {step.node or 'start'}",
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
            detail=f"{len(rnd.check.diagnostics)} diagnostics, {rnd.check.duration_s:.2f} s"
                   + (" (served from the TLA+ run cache)" if rnd.check.cached else ""),
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
    events.extend(_step_event(s, s.ran_in_round) for s in steps if s.checkpoint_id not in placed and s.node)
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
                messages=[message_view(m) for m in event.messages],
                reply=event.text, error=f"{event.error_type}: {event.error}" if event.error else "",
                requested=requested_text(event.params), received=received_text(event.sent_params),
                dropped=bool((event.sent_params or {}).get("dropped")), sent_params=event.sent_params,
                latency_s=event.latency_s, cost_usd=event.cost_usd, cached=event.cached,
                params=_call_params(event), tools=_tool_names(event.params.get("tools")),
                reply_tool_calls=[tool_call_view(c) for c in (event.response or {}).get("tool_calls") or []],
                finish_reason=str((event.response or {}).get("finish_reason") or ""),
                raw_reply=json.dumps(event.response, indent=2, default=str)[:DETAIL_TEXT_LIMIT] if event.response else ""))
    return calls


# the fields of a model call's record that the page shows in their own places; any other field (a newer record's
# account of what the provider was really sent, say) is shown with the request's parameters
_CALL_FIELDS = {"v", "seq", "at", "stage", "type", "role", "purpose", "round", "agent", "attempt_id", "model",
                "provider", "is_control", "request_hash", "sample_index", "messages", "params", "response",
                "prompt_tokens", "completion_tokens", "cost_usd", "spend_usd", "latency_s", "cached", "error",
                "error_type"}


def _tool_names(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return []
    return [str((t.get("function") or {}).get("name") or t.get("name") or "?") if isinstance(t, dict) else str(t)
            for t in tools]


def _param_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _call_params(event: Any) -> list[tuple[str, str]]:
    """The request's parameters as the call's record holds them (the tools offered listed by name apart), then
    every other request-parameter field of the record or its reply (``params_sent``, ``params_dropped``, ...)."""
    out = [(k, _param_text(v)) for k, v in sorted(event.params.items()) if k != "tools"]
    record = event.model_dump(mode="json")
    out += [(k, _param_text(v)) for k, v in record.items() if k not in _CALL_FIELDS and v not in (None, {}, [])]
    reply = event.response or {}
    out += [(f"reply {k}", _param_text(v)) for k, v in reply.items() if "param" in k and v not in (None, {}, [])]
    return out


def checkpoint_values(attempt: Attempt, experiment_dir: Path) -> dict[str, dict[str, Any]]:
    """The graph's state at each checkpoint of the attempt (checkpoint id -> its channels, as JSON values)."""
    from sysmo.graphs.checkpoint import checkpoint_tuples

    if not attempt.checkpoint_db:
        return {}
    recorded = Path(attempt.checkpoint_db)
    found = next((c for c in (recorded, experiment_dir / recorded.name) if c.is_file()), None)
    if found is None:
        return {}
    try:
        tuples = checkpoint_tuples(found, attempt.id, read_only=True)
    except (sqlite3.Error, KeyError, NotImplementedError) as exc:  # a damaged or foreign file: no states shown
        log.warning("view.checkpoints_unreadable", attempt=attempt.id, path=str(found), error=str(exc)[:300])
        return {}
    out = {}
    for t in tuples:
        values = {k: v for k, v in t.checkpoint.get("channel_values", {}).items() if not k.startswith("branch:")}
        out[t.checkpoint["id"]] = json.loads(json.dumps(values, default=lambda v: v.model_dump(mode="json")
                                                        if hasattr(v, "model_dump") else str(v)))
    return out


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more characters]"


def state_text(values: dict[str, Any]) -> str:
    return _cut(json.dumps(values, indent=2), STATE_TEXT_LIMIT)


def state_changes(before: dict[str, Any] | None, after: dict[str, Any]) -> list[StateChange]:
    """The keys of the state a step added, changed or removed, each with its new value (the first step: every key)."""
    before = before or {}
    out = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            out.append(StateChange(key=key, kind="removed", value=_cut(json.dumps(before[key], indent=2), CHANGE_TEXT_LIMIT)))
        elif key not in before or before[key] != after[key]:
            out.append(StateChange(key=key, kind="added" if key not in before else "changed",
                                   value=_cut(json.dumps(after[key], indent=2), CHANGE_TEXT_LIMIT)))
    return out


def short_ids(ids: list[str], least: int = SHORT_ID) -> dict[str, str]:
    """Each id's shortest prefix (``least`` characters or more) that no other id of ``ids`` starts with."""
    out = {}
    for i in ids:
        n = least
        while n < len(i) and any(o != i and o.startswith(i[:n]) for o in ids):
            n += 1
        out[i] = i[:n]
    return out


def step_views(attempt: Attempt, experiment_dir: Path, full: bool = True) -> list[GraphStepView]:
    """The attempt's graph steps as the page shows them: the input checkpoint left out (nothing of the agent's
    has run), each with the round it ran in, its state and the state's changes since the step before, a short
    checkpoint id, whether a fork inherited it and the ``sysmo fork`` command resuming from it."""
    values = checkpoint_values(attempt, experiment_dir) if full else {}
    steps = graph_steps(attempt, experiment_dir)
    ids = short_ids([s.checkpoint_id for s in steps])
    inherited_to = next((i for i, s in enumerate(steps) if s.checkpoint_id == attempt.forked_at), -1) \
        if attempt.parent_attempt_id else -1
    out: list[GraphStepView] = []
    previous: dict[str, Any] | None = None
    previous_round: int | None = None
    for i, s in enumerate(steps):
        state = values.get(s.checkpoint_id)
        if s.step >= 0:
            out.append(GraphStepView(
                **s.model_dump(), state=state_text(state) if state is not None else "",
                ran_in_round=previous_round if s.node else s.round_index,
                changes=state_changes(previous, state) if state is not None else [],
                short_id=ids[s.checkpoint_id], inherited=i <= inherited_to,
                fork_command=f"sysmo fork {attempt.id} --at {s.step}" if s.next else ""))
        previous = state if state is not None else previous
        previous_round = s.round_index
    return out


def time_splits(store: Store, attempt: Attempt) -> list[TimeSplit]:
    """Per round: its span, the time its model calls took and its tool checks took (the store's ``llm_calls`` and
    ``tool_calls``); the rest of the span was spent waiting (for a tool slot, the event loop) or in the harness."""
    model = {r["idx"]: r["s"] or 0.0 for r in store.query(
        "SELECT round_idx AS idx, SUM(latency_s) AS s FROM llm_calls WHERE attempt_id=? GROUP BY round_idx", (attempt.id,))}
    tool = {r["idx"]: r["s"] or 0.0 for r in store.query(
        "SELECT round_idx AS idx, SUM(duration_s) AS s FROM tool_calls WHERE attempt_id=? GROUP BY round_idx", (attempt.id,))}
    return [TimeSplit(round_index=r.index, kind=r.kind, total_s=r.duration_s,
                      model_s=model.get(r.index, sum(c.latency_s for c in r.llm_calls)),
                      tool_s=tool.get(r.index, r.check.duration_s if r.check else 0.0),
                      inherited=i < attempt.inherited_rounds) for i, r in enumerate(attempt.rounds)]


def outcome_of(row: AttemptRow, attempt: Attempt, stages: list[StageView]) -> Outcome:
    """How the attempt ended and the first reason it did not pass: its error, the first error diagnostic of the
    last failed tool check (file:line), else the first failed stage's reason."""
    if row.status == "error":
        return Outcome(status=row.status, headline=f"{row.error_kind or 'run'} error", reason=row.error,
                       anchor="attempt-error")
    failed = next((r for r in reversed(attempt.rounds) if r.check is not None and r.check.outcome.value != "ok"), None)
    last = attempt.rounds[-1] if attempt.rounds else None
    if row.status == "passed" and not row.failed_stage:
        index = last.index if last else 0
        return Outcome(status=row.status, headline=f"passed in round {index} "
                                                  + ("(the first answer)" if index == 0 else f"(repair {index})"))
    headline = f"{row.status}" + (f" at stage {row.failed_stage}" if row.failed_stage else "")
    if failed is not None and (row.status != "passed" or failed is last):
        diagnostic = next((d for d in failed.check.diagnostics if d.severity.value == "error"),
                          failed.check.diagnostics[0] if failed.check.diagnostics else None)
        if diagnostic is not None:
            where = ":".join(str(x) for x in (diagnostic.file or (failed.artifact.main_file if failed.artifact else ""),
                                              diagnostic.line, diagnostic.column) if x)
            return Outcome(status=row.status, headline=headline, reason=f"{where}: {diagnostic.message}".lstrip(": "),
                           anchor=f"round-{failed.index}-check")
        return Outcome(status=row.status, headline=headline, reason=f"{failed.check.tool}: {failed.check.outcome.value}",
                       anchor=f"round-{failed.index}-check")
    stage = next((s for s in stages if s.stage == row.failed_stage), None)
    if stage is not None:
        reason = stage.skipped_because or ", ".join(f"{k}={v}" for k, v in list(stage.scalars.items())[:4]) or stage.outcome
        return Outcome(status=row.status, headline=headline, reason=reason, anchor=f"stage-{stage.stage}")
    problem = next((r.extraction_error or r.error for r in reversed(attempt.rounds) if r.extraction_error or r.error), "")
    return Outcome(status=row.status, headline=headline, reason=problem or "", anchor="")


def attempt_view(store: Store, attempt_id: str, rows: list[AttemptRow] | None = None, full: bool = True) -> AttemptView:
    """One attempt's page; ``full=False`` leaves out what the compare page does not show (the graph, checkpoint
    states, listings and diffs per round, the event stream's model calls, the run's settings)."""
    attempt = store.attempt(attempt_id)
    experiment_id = store.query("SELECT experiment_id FROM attempts WHERE id=?", (attempt.id,))[0]["experiment_id"]
    all_rows = attempt_rows(store, experiment_id) if rows is None else rows
    row = next(r for r in all_rows if r.id == attempt.id)
    card = store.scorecard(attempt.id)
    steps = step_views(attempt, store.path.parent, full=full)
    # a step belongs to the round its state was in when the step ran (the round index it started from)
    step_round = {s.checkpoint_id: s.ran_in_round if s.node else None for s in steps}
    rounds: list[RoundView] = []
    previous: Artifact | None = None
    for i, rnd in enumerate(attempt.rounds):
        rounds.append(RoundView(
            index=rnd.index, kind=rnd.kind, duration_s=rnd.duration_s, inherited=i < attempt.inherited_rounds,
            messages=[message_view(m) for m in rnd.messages],
            response=rnd.response,
            llm_calls=[LlmCallView(role=c.role, purpose=c.purpose, model=c.model, prompt_tokens=c.prompt_tokens,
                                   completion_tokens=c.completion_tokens, cost_usd=c.cost_usd, latency_s=c.latency_s,
                                   cached=c.cached) for c in rnd.llm_calls],
            check=_check_view(rnd), listings=listings(rnd) if full else [],
            diffs=side_by_side(previous, rnd.artifact) if full else [],
            extraction_error=rnd.extraction_error, extraction_notes=rnd.extraction_notes, error=rnd.error,
            graph_steps=[s for s in steps if s.node and step_round.get(s.checkpoint_id) == rnd.index]))
        previous = rnd.artifact or previous
    from sysmo.view.graph_svg import agent_graph

    stages = [stage_view(s) for s in card.stages] if card else []
    forks = set(store.forks_of(attempt.id))  # once: not once per row of the experiment
    return AttemptView(
        outcome=outcome_of(row, attempt, stages), times=time_splits(store, attempt),
        settings=settings_lines(experiment_settings(store, experiment_id)) if full else [],
        graph=agent_graph(attempt.agent, [s.node for s in steps if s.node and s.source != "fork"
                                          and s.node not in ("update_state", "fork")]) if full else None,
        row=row, is_control=attempt.is_control, max_rounds=attempt.max_rounds, arm=attempt.arm_label,
        seed=attempt.seed, time_limit_s=attempt.time_limit_s, started_at=attempt.started_at,
        checkpoint_db=attempt.checkpoint_db, rounds=rounds, timeline=_timeline(rounds, steps, attempt), graph_steps=steps,
        stages=stages, cascade=card.cascade if card else None,
        extras=json.dumps(attempt.extras, indent=2, default=str)[:DETAIL_TEXT_LIMIT] if attempt.extras else "",
        final_files=dict(attempt.final_artifact.files) if attempt.final_artifact else {},
        siblings=[r for r in all_rows if r.task_id == attempt.task_id and r.id != attempt.id],
        model_calls=(calls := model_calls(store, attempt.id) if full else []),
        dropped_params=dropped_text([c.sent_params for c in calls]),
        fork=ForkView(parent_attempt_id=attempt.parent_attempt_id, forked_at=attempt.forked_at,
                      forked_at_step=attempt.forked_at_step, inherited_rounds=attempt.inherited_rounds,
                      changes=attempt.fork_changes) if attempt.parent_attempt_id else None,
        forks=[r for r in all_rows if r.id in forks])


# ---------------------------------------------------------------------------------------------- report
CI_TEXT = re.compile(r"^\s*(-?[\d.]+(?:e-?\d+)?)\s*\[(-?[\d.]+(?:e-?\d+)?),\s*(-?[\d.]+(?:e-?\d+)?)\]")
LOWER_IS_BETTER = ("rounds", "spent $", "incl. cached at list price $", "errors")


def _short_header(column: str) -> str:
    """A leaderboard header: the report's column name (``evals.glossary``), its CI shown as a bar instead of
    " [95% CI]" (the definition goes on hover)."""
    return column.removesuffix(" [95% CI]")


def skipped_stages(store: Store, experiment_id: str) -> dict[tuple[str, str], str]:
    """(attempt id, stage) -> why, for each stage skipped for a reason of its own (no judge, no traces): not
    scored, as opposed to gated by an earlier stage's failure (the cascade working, a 0)."""
    rows = store.query(
        "SELECT sc.attempt_id AS id, json_extract(st.value, '$.stage') AS stage, "
        "json_extract(st.value, '$.skipped_because') AS why FROM scores sc, json_each(sc.scorecard_json, '$.stages') st "
        "WHERE sc.experiment_id = ? AND json_extract(st.value, '$.outcome') = 'skipped' "
        "AND COALESCE(json_extract(st.value, '$.detail.gated'), 0) = 0", (experiment_id,))
    return {(r["id"], r["stage"]): r["why"] or "no reason given" for r in rows}


def scored_stages(store: Store, experiment_id: str) -> set[tuple[str, str]]:
    """(kind, stage) pairs some attempt of the kind was really scored on (an outcome other than skipped)."""
    return {(r["kind"], r["stage"]) for r in store.query(
        "SELECT DISTINCT a.kind AS kind, json_extract(st.value, '$.stage') AS stage FROM scores sc "
        "JOIN attempts a ON a.id = sc.attempt_id, json_each(sc.scorecard_json, '$.stages') st "
        "WHERE sc.experiment_id = ? AND json_extract(st.value, '$.outcome') != 'skipped'", (experiment_id,))}


def _without_unscored(frame: Any, skipped: dict[tuple[str, str], str], scored: set[tuple[str, str]]) -> Any:
    """The attempts frame with each not-scored stage (and its sub-metrics) empty instead of the store's 0: a stage
    skipped for a reason of its own, and every attempt's value of a stage no attempt of its kind was scored on
    (a judge stage with no judge: its gated skips are not failures of the stage either)."""
    if frame.empty or not skipped:
        return frame
    frame = frame.copy()
    index = {attempt_id: i for i, attempt_id in enumerate(frame["id"])}

    def columns(stage: str) -> list[int]:
        return [frame.columns.get_loc(c) for c in frame.columns if c == f"score.{stage}" or c.startswith(f"score.{stage}.")]

    for (attempt_id, stage), _ in skipped.items():
        if attempt_id in index:
            for col in columns(stage):
                frame.iat[index[attempt_id], col] = float("nan")
    for kind, stage in {(str(frame.at[index[a], "kind"]), st) for a, st in skipped if a in index} - scored:
        rows = (frame["kind"] == kind).to_numpy()
        for col in columns(stage):
            frame.iloc[rows, col] = float("nan")
    return frame


def scoring_provenance(store: Store, experiment_id: str) -> dict[str, str]:
    """Every stage's provenance (``stage.key`` -> value) over the experiment's scorecards, in SQL (the report's
    ``tables.provenance`` loads every attempt for it)."""
    rows = store.query(
        "SELECT DISTINCT json_extract(st.value, '$.stage') AS stage, p.key AS key, p.value AS value "
        "FROM scores sc, json_each(sc.scorecard_json, '$.stages') st, json_each(st.value, '$.provenance') p "
        "WHERE sc.experiment_id = ?", (experiment_id,))
    return {f"{r['stage']}.{r['key']}": str(r["value"]) for r in rows}


ARM_SUFFIX = re.compile(r" \[([a-z_]+)=([^\]]*)\]")


def agent_and_arm(label: str) -> tuple[str, str]:
    """A report row's agent label (``base_modeling [feedback=none]``, ``tables.split_by_arms``) as the agent and
    the arm as the attempt table names it (``feedback=none``), so that its numbers link to the arm's attempts."""
    parts = ARM_SUFFIX.findall(label)
    return (label.split(" [", 1)[0], ",".join(f"{name}={value}" for name, value in parts)) if parts else (label, "")


def _board(kind: str, table: Any, unscored: dict[str, str], experiment_id: str) -> Leaderboard:
    import pandas as pd

    from sysmo.evals.glossary import definition_of
    from sysmo.evals.metric_scales import metric_scale

    def meaning(col: str) -> str:
        definition = definition_of(col, stages=[col])
        return f"{col}: {definition.meaning}. Denominator: {definition.denominator}." if definition else col

    columns = [str(c) for c in table.columns]
    rows: list[list[BoardCell]] = []
    for record in table.to_dict(orient="records"):
        agent, arm = agent_and_arm(str(record["agent"]))
        group = {"agent": agent, "model": str(record["model"]), "kind": kind, **({"arm": arm} if arm else {})}
        cells = []
        for col in columns:
            value = record[col]
            missing = value is None or (isinstance(value, float) and pd.isna(value))
            text = "" if missing else (f"{value:.3f}" if isinstance(value, float) else str(value))
            cell = BoardCell(text=text, title=text)
            if col in ("agent", "model", "samples"):
                cell.query = group
            elif col.startswith("pass@1 after repair"):
                cell.query = {**group, "status": "passed"}
            elif col == "errors":
                cell.query = {**group, "status": "error"}
            stage = col.split(" (")[0]
            if missing and col not in ("rounds",):
                cell.text = "—"
                cell.title = f"not scored for {group['agent']} / {group['model']}" + (
                    f": {unscored[stage]}" if stage in unscored else "")
            elif (m := CI_TEXT.match(text)) is not None:
                cell.value, cell.low, cell.high = (float(x) for x in m.groups())
                scale = metric_scale(stage)
                cell.scale = (scale.low or 0.0, scale.high if scale.high is not None else 1.0)
                cell.text = m.group(1)
                cell.title = f"{text} (mean [95% CI])"
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and col not in ("tasks", "samples"):
                cell.value = float(value)
            elif col == "errors":
                cell.value = float(text.split(" ")[0]) if text.split(" ")[0].isdigit() else None
            cells.append(cell)
        rows.append(cells)
    for stage, why in unscored.items():  # a stage no group of the kind was scored on: a column of "—"
        if stage not in [c.split(" (")[0] for c in columns]:
            at = columns.index("errors") if "errors" in columns else len(columns)
            columns.insert(at, stage)
            for cells in rows:
                cells.insert(at, BoardCell(text="—", title=f"not scored: {why}"))
    for j, col in enumerate(columns):  # the best value of each number column (ties all marked)
        values = [cells[j].value for cells in rows if cells[j].value is not None]
        if col in ("agent", "model", "tasks", "samples") or len(values) < 2 or len(set(values)) < 2:
            continue
        best = min(values) if col in LOWER_IS_BETTER else max(values)
        for cells in rows:
            cells[j].best = cells[j].value == best
    def extra(col: str) -> bool:
        k = col.split("@", 1)[1].split(" ")[0] if "@" in col else "1"
        return k != "1" or "." in col.split(" (")[0] or col.startswith("best-of-n")

    def on_phone(col: str) -> bool:  # agent, model, pass@1 after repair and the kind's headline score
        from sysmo.evals.tables import DEFAULT_SELECTION_METRIC

        headline = DEFAULT_SELECTION_METRIC.get(kind, "").split(".")[0]
        return col in ("agent", "model") or col.startswith("pass@1 after repair") or (
            bool(headline) and col.split(" (")[0].split(" [")[0] == headline)

    return Leaderboard(kind=kind, columns=[BoardColumn(name=_short_header(c), title=meaning(c), extra=extra(c),
                                                       phone=on_phone(c)) for c in columns], rows=rows)


PLOT_CAPTIONS = {
    "rounds_to_success": "Share of attempts passed by each round (0 = the first answer), per agent / model.",
    "cost_vs_score": "Cost incl. cached at list price of each agent / model / kind group against its pass@1 after repair.",
}


def plot_caption(stem: str) -> str:
    """What a plot of ``sysmo report`` shows, from its file name."""
    if stem in PLOT_CAPTIONS:
        return PLOT_CAPTIONS[stem]
    if stem.startswith("heatmap_"):
        rest = stem[len("heatmap_"):]
        kind = next((k for k in ("uml_class", "sysml", "tla", "architecture") if rest.startswith(k + "_")), rest.split("_")[0])
        metric = rest[len(kind) + 1:]
        metric = ("pass@1 first answer parses (OODEval)" if metric == "first_answer_parses_pass_1"
                  else "pass@1 after repair" if metric == "pass_1" else metric)
        return f"{metric} per agent (rows) and model (columns), {kind} tasks."
    if stem.startswith("distribution_"):
        return f"Distribution of {stem[len('distribution_'):]} per attempt, one box per agent / model."
    return stem.replace("_", " ")


def plots_of(experiment_dir: Path) -> list[Plot]:
    folder = experiment_dir / "report" / "plots"
    if not folder.is_dir():
        return []
    order = {"heatmap": 0, "cost": 1, "rounds": 2, "distribution": 3}
    files = sorted(folder.glob("*.png"), key=lambda p: (order.get(p.stem.split("_")[0], 9), p.stem))
    return [Plot(name=p.name, caption=plot_caption(p.stem)) for p in files]


def paired_tables(frame: Any, config: dict[str, Any],
                  unreceived: Sequence[Any] = ()) -> tuple[list[PairedTable], str, str]:
    """The report's paired comparisons (``evals.paired``: McNemar, Wilcoxon, bootstrap CIs), one table per family,
    each cell of a test significant after correction marked; the tables' note and what the mark means.
    ``unreceived``: the factors a provider received as one value (``evals.provider_params``), left out and named."""
    from sysmo.evals.paired import display_tables, paired_rows
    from sysmo.evals.provider_params import without_unreceived
    from sysmo.evals.report import LEVELS_NOTE, baseline_text, experiment_levels
    from sysmo.evals.paired import CORRECTION_NAMES
    from sysmo.evals.significance import significance_note, significant_columns
    from sysmo.evals.tables import DEFAULT_SELECTION_METRIC

    correction = CORRECTION_NAMES["holm"]
    if frame.empty:
        return [], "", ""
    rows = paired_rows(frame, headline={**DEFAULT_SELECTION_METRIC, **(config.get("selection_metric") or {})},
                       listed=experiment_levels(config))
    rows = without_unreceived(rows, unreceived, frame)
    by_family: dict[str, list[Any]] = {}
    for row in rows:
        by_family.setdefault(row.family, []).append(row)
    tables = []
    for family, table in display_tables(rows).items():
        columns = [str(c) for c in table.columns]
        significant = [[j in marked for j in range(len(columns))]
                       for marked in (significant_columns(columns, r) for r in by_family[family])]
        tables.append(PairedTable(family=family, columns=columns, significant=significant,
                                  rows=[["" if v is None else str(v) for v in row] for row in table.itertuples(index=False)]))
    parts = [LEVELS_NOTE.format(correction=correction).replace("`", ""), *(u.note() for u in unreceived)]
    if tables:
        parts.append(f"{baseline_text(frame, config)}.")
    return tables, " ".join(parts), significance_note(correction)


def task_matrix(rows: list[AttemptRow]) -> TaskMatrix:
    """Per task x agent / model, every sample's status and headline score (forks left out)."""
    from sysmo.evals.tables import DEFAULT_SELECTION_METRIC

    plan = [r for r in rows if not r.parent_attempt_id]
    columns = sorted({f"{r.agent} / {r.model}" + (f" / {r.arm}" if r.arm else "") for r in plan})
    by_task: dict[str, dict[str, list[MatrixCell]]] = {}
    for r in sorted(plan, key=lambda r: (r.task_id, r.sample_index)):
        stage = DEFAULT_SELECTION_METRIC.get(r.kind, "").split(".")[0]
        score = r.scores.get(stage)
        title = f"sample {r.sample_index}: {r.status}" + (f", {stage} {score:.3f}" if score is not None else "") + (
            f", {r.not_scored[stage]}" if stage in r.not_scored else "") + (f", failed at {r.failed_stage}" if r.failed_stage else "")
        column = f"{r.agent} / {r.model}" + (f" / {r.arm}" if r.arm else "")
        by_task.setdefault(r.task_id, {}).setdefault(column, []).append(
            MatrixCell(attempt_id=r.id, status=r.status, score=score, title=title))
    return TaskMatrix(columns=columns, rows=[(task, [cells.get(c, []) for c in columns])
                                             for task, cells in sorted(by_task.items())])


def report_view(store: Store, experiment_id: str, rows: list[AttemptRow] | None = None) -> ReportView:
    """The comparison page: ``sysmo report``'s leaderboards (``sysmo.evals.leaderboard``) with links to the attempt
    table, CIs as bars and the best per column marked, not-scored stages as "—"; its plots; its paired tests; a
    task x agent / model matrix of every sample."""
    from sysmo.evals.leaderboard import errored_groups_note, leaderboards, metric_lines
    from sysmo.evals.provider_params import unreceived_factors
    from sysmo.evals.report import report_notes
    from sysmo.evals.tables import attempts_frame, summary_frame

    config = store.experiment(experiment_id)["config"]
    skipped = skipped_stages(store, experiment_id)
    every = attempts_frame(store, experiment_id)
    frame = every[every["status"] != "not_covered"].reset_index(drop=True) if not every.empty else every
    scored = scored_stages(store, experiment_id)
    frame = _without_unscored(frame, skipped, scored)
    summary = summary_frame(frame, config.get("selection_metric"), ks=(1, 3, config.get("samples") or 5))
    boards = leaderboards(summary, frame)
    kinds = dict(zip(frame["id"], frame["kind"])) if not frame.empty else {}
    unscored: dict[str, dict[str, str]] = {}
    for (attempt_id, stage), why in skipped.items():
        if attempt_id in kinds:
            unscored.setdefault(str(kinds[attempt_id]), {}).setdefault(stage, why)
    paired, paired_note, significance_note = paired_tables(frame, config, unreceived_factors(store, experiment_id))
    rows = attempt_rows(store, experiment_id) if rows is None else rows
    never = {stage for stages in unscored.values() for stage in stages} - {stage for _, stage in scored}
    # a plot of a stage no attempt was scored on would draw zeros: left out (the notes say why)
    plots = [p for p in plots_of(store.path.parent)
             if not any(p.name.endswith(f"_{stage}.png") for stage in never)]
    return ReportView(boards=[_board(kind, table, unscored.get(kind, {}), experiment_id) for kind, table in boards.items()],
                      metric_lines=metric_lines(boards), errored_note=errored_groups_note(frame),
                      notes=report_notes(store, experiment_id, {"scoring_provenance": scoring_provenance(store, experiment_id)}), plots=plots,
                      plots_missing="" if plots else f"No plots yet: `sysmo report {store.path.parent}` writes them.",
                      paired=paired, paired_note=paired_note, significance_note=significance_note,
                      matrix=task_matrix(rows), breakdowns=breakdown_tables(frame))


def breakdown_tables(frame: Any) -> list[BreakdownTable]:
    """The report's "Pass rate by ..." tables as the page shows them (rates to 3 decimals, "—" where a group ran
    no attempt of that level)."""
    from sysmo.evals.report import pass_rate_breakdowns

    out = []
    for by, table in pass_rate_breakdowns(frame).items():
        if table.empty:
            continue
        rows = [[("—" if v != v else f"{v:.3f}") if isinstance(v, float) else str(v) for v in row]
                for row in table.itertuples(index=False)]
        out.append(BreakdownTable(by=by, columns=[str(c) for c in table.columns], rows=rows))
    return out


# ---------------------------------------------------------------------------------------------- compare and progress
def aligned_rounds(a: AttemptView, b: AttemptView) -> list[tuple[RoundView | None, RoundView | None]]:
    """The two attempts' rounds side by side, round i beside round i."""
    count = max(len(a.rounds), len(b.rounds))
    return [(a.rounds[i] if i < len(a.rounds) else None, b.rounds[i] if i < len(b.rounds) else None) for i in range(count)]


def side_settings(a: AttemptView, b: AttemptView) -> tuple[list[SideSetting], list[SideSetting]]:
    """Each side's agent, model, sample and every arm setting, those that differ from the other side's marked."""
    def settings(v: AttemptView) -> dict[str, str]:
        arm = dict(part.split("=", 1) for part in v.arm.split(",") if "=" in part)
        return {"agent": v.row.agent, "model": v.row.model, "sample": str(v.row.sample_index), **arm}

    left, right = settings(a), settings(b)
    names = list(dict.fromkeys([*left, *right]))
    return ([SideSetting(name=n, value=left.get(n, "—"), differs=left.get(n) != right.get(n)) for n in names if n in left],
            [SideSetting(name=n, value=right.get(n, "—"), differs=left.get(n) != right.get(n)) for n in names if n in right])


def prompt_text(rnd: RoundView) -> str:
    """A round's request as text: each message under its role, tool calls and tool results included."""
    parts = []
    for m in rnd.messages:
        head = f"[{m.role}" + (f" answering {m.tool_call_id}" if m.tool_call_id else "") + "]"
        calls = [f"-> {c.name}({c.arguments})" for c in m.tool_calls]
        parts.append("\n".join([head, *([m.content] if m.content else []), *calls]))
    return "\n\n".join(parts)


def prompt_diffs(rounds: list[tuple[RoundView | None, RoundView | None]]) -> list[FileDiff | None]:
    """Per aligned round: the two requests diffed side by side (None when they are the same or a side has none)."""
    out: list[FileDiff | None] = []
    for left, right in rounds:
        diff = files_diff({"prompt": prompt_text(left)}, {"prompt": prompt_text(right)}) if left and right else []
        out.append(diff[0] if diff else None)
    return out


def step_pairs(a: AttemptView, b: AttemptView) -> list[StepPair]:
    """The two attempts' graph steps side by side by step number; ``shared`` where both hold one checkpoint (what
    a fork inherited from its parent)."""
    left, right = {s.step: s for s in a.graph_steps}, {s.step: s for s in b.graph_steps}
    return [StepPair(step=n, left=left.get(n), right=right.get(n),
                     shared=n in left and n in right and left[n].checkpoint_id == right[n].checkpoint_id)
            for n in sorted(set(left) | set(right))]


def final_diff(a: AttemptView, b: AttemptView) -> list[FileDiff]:
    """The two final models, file by file, as a side-by-side diff (difflib)."""
    return files_diff(a.final_files, b.final_files)


def progress(runs_dir: Path) -> dict[str, dict[str, Any]]:
    """Per experiment: status, done and planned attempts, passed, failed, errors, pass rate (and each arm's, when
    there are several) and cost (the experiments page polls this to refresh running experiments), and apart from
    them its forks."""
    out = {}
    for experiment_id, directory in experiment_dirs(runs_dir).items():
        try:
            store = Store(directory / STORE_FILE)
        except (SysmoError, sqlite3.Error):
            continue  # the index lists it as unreadable
        try:
            record = store.experiment(experiment_id)
            counts = store.query(  # the plan's attempts (as experiment_summary counts them); forks apart
                "SELECT COUNT(*) AS n, SUM(status='passed') AS passed, SUM(status='failed') AS failed, "
                "SUM(status='error') AS errors, SUM(COALESCE(cost_usd, 0)) AS cost FROM attempts WHERE experiment_id=? "
                "AND parent_attempt_id IS NULL", (experiment_id,))[0]
            forks = store.query("SELECT COUNT(*) AS n FROM attempts WHERE experiment_id=? "
                                "AND parent_attempt_id IS NOT NULL", (experiment_id,))[0]["n"] or 0
            by_arm = store.query(
                "SELECT arm, COUNT(*) AS n, SUM(status='passed') AS passed FROM attempts WHERE experiment_id=? "
                "AND parent_attempt_id IS NULL GROUP BY arm", (experiment_id,))
        except (SysmoError, sqlite3.Error, ValueError):
            continue
        finally:
            store.close()
        n = counts["n"] or 0
        varied = varied_factors(r["arm"] for r in by_arm)
        arms = {short_label(r["arm"], varied): r for r in by_arm if r["arm"]} if varied else {}
        out[experiment_id] = {
            "status": record.get("status") or "", "attempts": n, "passed": counts["passed"] or 0,
            "failed": counts["failed"] or 0, "errors": counts["errors"] or 0, "cost_usd": counts["cost"] or 0.0,
            "pass_rate": (counts["passed"] or 0) / n if n else None,
            # with more than one arm, the list shows each arm's rate (forks left out), never one over every arm
            "arm_pass_rates": {arm: (r["passed"] or 0) / r["n"] for arm, r in arms.items() if r["n"]},
            "planned": (record.get("environment") or {}).get("planned_attempts"), "forks": forks}
    return out
