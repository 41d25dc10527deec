"""Experiment results as DataFrames: one row per attempt, summaries per (agent, model, kind), breakdowns.

These frames are the single source of every report table, plot and export.

Three pass@k, each with the unbiased estimator over the n samples of a task (``statistics.pass_at_k``), averaged
over every task of the group (a task with no passing sample counts 0); their names are the glossary's
(``sysmo.evals.glossary``), the same in the report, the CSV files, the viewer and the docs:

- ``pass@k after repair`` (sysmo's; summary column ``pass@k``): a sample counts when its final artifact passed the
  agent's tool check, after up to ``max_rounds`` repair rounds driven by tool feedback (column ``passed``).
- ``pass@k first answer parses (OODEval)`` (OODEval's single-shot pass@k; column ``first answer parses pass@k``):
  a sample counts when its FIRST answer (round 0, no feedback) is accepted by the language's own parser
  (attempt column ``first_answer_parses``, ``first_answer_parses_check``). For PlantUML that is PlantUML's
  verdict alone, the oracle OODEval uses: our lint findings do not count. For the other languages it is the
  round-0 tool check.
- ``pass@k first answer passes`` (column ``first answer passes pass@k``): a sample counts when its first answer
  passed every check of the agent's tool check, lint included (``passed_round == 0``; attempt column
  ``first_answer_passes``): the paired tables test it beside the parser's.

best-of-n: each task's best sample by the kind's selection metric, averaged over the
group's tasks; a sample with no valid answer counts 0 (``metric_values``; docs/scoring-modes.md).

Metric scales are declared, never guessed from the values (``sysmo.evals.metric_scales``): every bounded metric
(0-1, 0-100 such as R2ABench's ``structure.ged_acc``, 1-5 judge rubrics) gets a mean and CI in the summary,
printed with its scale; counts stay in the per-attempt table.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from sysmo.contracts.arms import ARM_FACTORS, Arm, expand_arms, factor_values
from sysmo.evals.metric_scales import metric_scale
from sysmo.evals.statistics import best_of_n, bootstrap_ci, pass_at_ks
from sysmo.log import get_logger
from sysmo.store import Store
from sysmo.contracts.check import CheckResult, Outcome

# the metric that picks the best of n samples, per task kind (override in the experiment's selection_metric)
DEFAULT_SELECTION_METRIC = {
    "tla": "invariants",
    "sysml": "validity",
    "uml_class": "clue.clue",
    "architecture": "structure.node_f1",
}
GROUP = ["agent", "model", "kind"]
log = get_logger(__name__)
PARSER_CODE = {"plantuml": "syntax"}  # the diagnostic code of the tool's own parser, where lint runs beside it
FIRST_ANSWER_PARSES = "first answer parses "  # prefix of OODEval's single-shot pass@k columns
FIRST_ANSWER_PASSES = "first answer passes "  # prefix of the pass@k columns of first answers that passed every check
NOT_METRICS = {"agent", "model", "kind", "tasks", "samples", "pass_rate_ci", "mean rounds to pass", "cost $",
               "best-of-n tasks", "spent $", "tokens", "wall s"}


def first_answer_parses_check(check: CheckResult | None) -> bool:
    """Whether a first answer parses (OODEval's single-shot validity): its language's parser accepted it.

    No check (nothing could be extracted) is invalid; a tool that crashed or timed out is invalid. For
    PlantUML only PlantUML's own syntax verdict counts (code ``syntax``), not our lint rules.
    """
    if check is None or check.outcome not in (Outcome.OK, Outcome.FAILED):
        return False
    parser_code = PARSER_CODE.get(check.tool)
    if parser_code is None:
        return check.ok
    return not any(d.code == parser_code for d in check.diagnostics)


def _first_answer_parses(store: Store, experiment_id: str) -> dict[str, int]:
    rows = store.query("SELECT rounds.attempt_id AS attempt_id, rounds.check_json AS check_json FROM rounds JOIN "
                       "attempts ON attempts.id = rounds.attempt_id WHERE attempts.experiment_id=? AND rounds.idx=0",
                       (experiment_id,))
    return {r["attempt_id"]: int(first_answer_parses_check(CheckResult.model_validate_json(r["check_json"])
                                                    if r["check_json"] else None)) for r in rows}


def _arm_cells(store: Store, experiment_id: str) -> pd.DataFrame:
    """Each attempt's arm: label, seed and factor values from the attempts columns; an attempt stored before
    they existed ran its experiment's only arm, so the stored settings give its values."""
    config = store.experiment(experiment_id)["config"]
    only = {name: factor_values(name, config.get(name, factor.default))[0] for name, factor in ARM_FACTORS.items()}
    rows = store.query(f"SELECT id, arm, seed, {', '.join(ARM_FACTORS)} FROM attempts WHERE experiment_id=?",
                       (experiment_id,))
    cells = []
    for row in rows:
        values = {name: row[name] if row["arm"] is not None else only[name] for name in ARM_FACTORS}
        cells.append({"id": row["id"], "arm": row["arm"] or Arm.of(values).label, "seed": row["seed"],
                      **{name: ARM_FACTORS[name].text(value) if name == "strategy" else value
                         for name, value in values.items()}})
    return pd.DataFrame(cells, columns=["id", "arm", "seed", *ARM_FACTORS])


def split_by_arms(frame: pd.DataFrame, factors: tuple[str, ...] = tuple(ARM_FACTORS)) -> pd.DataFrame:
    """When an experiment has more than one value of an arm factor, the agent column names the value
    (``base_modeling [feedback=bare] [strategy=cot]``; strategy ``default``: sysmo's own task prompt): every
    grouping by agent, and the paired comparisons between agents on the same model, then split and compare
    the arms."""
    varied = [name for name in factors if name in frame.columns and frame[name].nunique(dropna=False) > 1]
    if not varied:
        return frame
    frame = frame.copy()
    for name in varied:
        frame["agent"] = frame["agent"] + f" [{name}=" + frame[name].map(ARM_FACTORS[name].text) + "]"
    return frame


def split_by_strategy(frame: pd.DataFrame) -> pd.DataFrame:
    """``split_by_arms`` for ``--strategy`` alone."""
    return split_by_arms(frame, ("strategy",))


def split_by_feedback(frame: pd.DataFrame) -> pd.DataFrame:
    """``split_by_arms`` for ``--feedback`` alone."""
    return split_by_arms(frame, ("feedback",))


def attempts_frame(store: Store, experiment_id: str) -> pd.DataFrame:
    """One row per attempt: identity, status, rounds, cost, and every score metric as a column.

    Forks (``sysmo fork``) are left out: a fork is not a sample of the experiment's plan (its first rounds are its
    parent's, and where it resumed was chosen after seeing how the parent went), so counting it would bias every
    rate of its (agent, model) pair."""
    rows = store.query("SELECT id, task_id, benchmark, kind, domain, difficulty, agent, model, sample_index, status, "
                       "n_rounds, repair_rounds, passed_round, duration_s, llm_time_s, tool_time_s, prompt_tokens, "
                       "completion_tokens, cost_usd, COALESCE(spend_usd, cost_usd) AS spend_usd, is_control, error, "
                       "json_extract(attempt_json, '$.extras.tool_mode') AS tool_mode "  # openhands; else NULL
                       "FROM attempts WHERE experiment_id=? "
                       "AND parent_attempt_id IS NULL", (experiment_id,))
    frame = pd.DataFrame([dict(r) for r in rows])
    if frame.empty:
        return frame
    metrics = store.query("SELECT attempt_id, metric, value FROM score_metrics WHERE experiment_id=?", (experiment_id,))
    if metrics:
        wide = pd.DataFrame([dict(r) for r in metrics]).pivot_table(index="attempt_id", columns="metric",
                                                                    values="value", aggfunc="first")
        wide.columns = [f"score.{c}" for c in wide.columns]
        frame = frame.merge(wide, left_on="id", right_index=True, how="left")
    frame["passed"] = (frame["status"] == "passed").astype(int)
    frame["first_answer_parses"] = frame["id"].map(_first_answer_parses(store, experiment_id)).fillna(0).astype(int)
    frame["first_answer_passes"] = (pd.to_numeric(frame["passed_round"], errors="coerce") == 0).astype(int)
    frame["tokens"] = frame["prompt_tokens"] + frame["completion_tokens"]
    frame = split_by_arms(frame.merge(_arm_cells(store, experiment_id), on="id", how="left"))
    return frame.sort_values(["task_id", "agent", "model", "sample_index"]).reset_index(drop=True)


def score_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.startswith("score.")]


def shown_metric(column: str, values: pd.Series) -> bool:
    """Whether a score column is summarised: its DECLARED scale (``sysmo.evals.metric_scales``) is bounded.

    Counts are not; 0-1, 0-100 and 1-5 metrics are. Values outside the declared range are logged, not hidden.
    """
    scale = metric_scale(column)
    data = values.dropna()
    if scale.shown and not data.empty and not all(scale.contains(float(v)) for v in data):
        log.warning("metric_scale.out_of_range", metric=column, scale=scale.name,
                    low=float(data.min()), high=float(data.max()))
    return scale.shown


def metric_values(group: pd.DataFrame, column: str, unscored: pd.Series | None = None) -> pd.Series:
    """Each attempt's value of a score column (``score.<stage>`` or ``score.<stage>.<metric>``) as every aggregate
    counts it (stage means, best-of-n): an answer that is not valid counts 0, one not scored is missing.

    The stored value where there is one. 0 where the answer had no value because it was invalid: a sub-metric of a
    stage that scored 0 with no metrics (gated by an earlier stage's failure: nothing extracted, rejected by the
    parser), or an attempt that errored with no scorecard at all. Missing (left out of a mean, a task of best-of-n
    counted apart) where the stage was not scored for a reason of its own (no judge, no traces), and for a
    metric whose scale does not start at 0 (a 1-5 rubric: 0 is not one of its values). ``unscored``: which
    attempts of ``group`` have no score at all (``unscored_attempts``), when the caller reads many columns of one
    group."""
    values = pd.to_numeric(group[column], errors="coerce")
    scale = metric_scale(column)
    if scale.low not in (0, 0.0):
        return values
    parts = column.split(".")
    if len(parts) > 2 and f"score.{parts[1]}" in group.columns:
        stage = pd.to_numeric(group[f"score.{parts[1]}"], errors="coerce")
        values = values.where(values.notna() | (stage != 0), 0.0)
    if unscored is None:
        unscored = unscored_attempts(group)
    if values.notna().any() and "status" in group.columns:  # (no attempt has it: not a metric of the group's kind)
        values = values.where(values.notna() | ~(unscored & (group["status"] == "error")), 0.0)
    return values


def unscored_attempts(group: pd.DataFrame) -> pd.Series:
    """Which attempts of ``group`` have no value in any score column."""
    return group[score_columns(group)].isna().all(axis=1)


def display_frame(summary: pd.DataFrame, headline_only: bool = True) -> pd.DataFrame:
    """The summary for people: "mean [low, high]" cells; by default only pass@k and each stage's headline value."""
    if summary.empty:
        return summary
    keep = []
    for col in summary.columns:
        if col.endswith(" CI") or col == "pass_rate_ci":
            continue
        if headline_only and "." in col and not col.startswith(("pass@", FIRST_ANSWER_PARSES, FIRST_ANSWER_PASSES,
                                                                 "best-of-n")):
            continue
        keep.append(col)
    out = summary[keep].copy()
    for col in keep:
        if f"{col} CI" in summary.columns:
            digits = metric_scale(col).decimals
            out[col] = [f"{m:.{digits}f} {ci}" if pd.notna(m) else ""
                        for m, ci in zip(summary[col], summary[f"{col} CI"])]
    if "pass@1" in out.columns:
        out["pass@1"] = [f"{m:.3f} {ci}" for m, ci in zip(summary["pass@1"], summary["pass_rate_ci"])]
    return out.rename(columns=display_name)


def display_name(column: str) -> str:
    """A summary column by its name in the report, the viewer and the docs (``sysmo.evals.glossary``):
    ``pass@3`` -> ``pass@3 after repair``, ``first answer parses pass@3`` -> ``pass@3 first answer parses
    (OODEval)``, ``first answer passes pass@3`` -> ``pass@3 first answer passes``, a 0-100 metric with its scale."""
    if column.startswith("pass@"):
        return f"{column} after repair"
    if column.startswith(FIRST_ANSWER_PARSES + "pass@"):
        return f"{column[len(FIRST_ANSWER_PARSES):]} {FIRST_ANSWER_PARSES.strip()} (OODEval)"
    if column.startswith(FIRST_ANSWER_PASSES + "pass@"):
        return f"{column[len(FIRST_ANSWER_PASSES):]} {FIRST_ANSWER_PASSES.strip()}"
    scale = metric_scale(column)
    if scale.shown and scale.name != "0-1" and column not in NOT_METRICS:
        return f"{column} ({scale.name})"
    return column


def summary_frame(frame: pd.DataFrame, selection_metric: dict[str, str] | None = None,
                  ks: tuple[int, ...] = (1, 3, 5)) -> pd.DataFrame:
    """Per (agent, model, kind): tasks, samples, pass@k (unbiased), best-of-n, metric means with 95% CIs, cost."""
    if frame.empty:
        return pd.DataFrame()
    selection = {**DEFAULT_SELECTION_METRIC, **(selection_metric or {})}
    out = []
    for (agent, model, kind), group in frame.groupby(GROUP, sort=True):
        per_task = group.groupby("task_id")
        counts = [(len(g), int(g["passed"].sum())) for _, g in per_task]
        row: dict[str, Any] = {"agent": agent, "model": model, "kind": kind, "tasks": len(counts),
                               "samples": int(len(group))}
        for k, value in pass_at_ks(counts, ks).items():
            row[f"pass@{k}"] = value
        for prefix, column in ((FIRST_ANSWER_PARSES, "first_answer_parses"),
                               (FIRST_ANSWER_PASSES, "first_answer_passes")):
            if column in group.columns:
                firsts = [(len(g), int(g[column].sum())) for _, g in per_task]
                for k, value in pass_at_ks(firsts, ks).items():
                    row[f"{prefix}pass@{k}"] = value
        ci = bootstrap_ci(list(group.groupby("task_id")["passed"].mean()))
        row["pass_rate_ci"] = f"[{ci.low:.3f}, {ci.high:.3f}]"
        metric = f"score.{selection.get(kind, '')}"
        unscored = unscored_attempts(group)  # once per group, not once per column
        for col in score_columns(group):
            values = metric_values(group, col, unscored).dropna()
            if values.empty or not shown_metric(col, values):
                continue
            ci = bootstrap_ci(list(values))
            digits = metric_scale(col).decimals
            row[f"{col[6:]}"] = ci.mean
            row[f"{col[6:]} CI"] = f"[{ci.low:.{digits}f}, {ci.high:.{digits}f}]"
        if metric in group.columns:
            best = best_of_n([list(g) for _, g in metric_values(group, metric, unscored).groupby(group["task_id"])])
            if best.mean is not None:
                row[f"best-of-n {selection[kind]}"] = best.mean
                row["best-of-n tasks"] = best.tasks  # its denominator; of ``tasks``
        solved = group[group["passed"] == 1]
        row["mean rounds to pass"] = float(solved["passed_round"].mean() + 1) if not solved.empty else None
        row["spent $"] = float(group["spend_usd"].sum())  # new money
        row["cost $"] = float(group["cost_usd"].sum())  # the replies at list price, cached ones included
        row["tokens"] = int(group["tokens"].sum())
        row["wall s"] = float(group["duration_s"].sum())
        out.append(row)
    return pd.DataFrame(out)


def breakdown_frame(frame: pd.DataFrame, by: str, metric: str = "passed") -> pd.DataFrame:
    """Mean of ``metric`` per (agent, model) and a task attribute (benchmark, domain, difficulty) or an attempt's
    tool-calling mode (``tool_mode``)."""
    if frame.empty or by not in frame.columns or metric not in frame.columns:
        return pd.DataFrame()
    data = frame.dropna(subset=[by])
    if data.empty:
        return pd.DataFrame()
    table = data.pivot_table(index=["agent", "model"], columns=by, values=metric, aggfunc="mean")
    return table.reset_index()


def mixes_tool_modes(frame: pd.DataFrame) -> bool:
    """Whether the attempts ran in more than one tool-calling mode (an (agent, model) group in both, or models in
    different ones): then the report breaks pass rates down by ``tool_mode``."""
    return "tool_mode" in frame.columns and frame["tool_mode"].dropna().nunique() > 1


def rounds_to_success(frame: pd.DataFrame, max_rounds: int) -> pd.DataFrame:
    """Share of attempts passed by round r (cumulative), per (agent, model)."""
    rows = []
    for (agent, model), group in frame.groupby(["agent", "model"]):
        total = len(group)
        for r in range(max_rounds + 1):
            share = float(((group["passed"] == 1) & (group["passed_round"] <= r)).sum()) / total if total else 0.0
            rows.append({"agent": agent, "model": model, "round": r, "passed_share": share})
    return pd.DataFrame(rows)


def _run_kind(config: dict) -> str:
    """control / replay / live, from the stored config's generator models (older records need no new column)."""
    from sysmo.llm.roles import run_kind

    names = [m if isinstance(m, str) else m.get("model", "") for m in config.get("models") or []]
    return run_kind(names) if names else "live"


def tool_versions(store: Store, experiment_id: str) -> dict[str, str]:
    """The version of every tool the experiment's checks ran."""
    return {f"{r['tool']}": r["tool_version"] for r in store.query(
        "SELECT DISTINCT tool, tool_version FROM tool_calls JOIN attempts ON attempts.id = tool_calls.attempt_id "
        "WHERE experiment_id=?", (experiment_id,))}


def experiment_settings(store: Store, experiment_id: str) -> dict[str, Any]:
    """``run_settings`` of a stored experiment, tool versions included."""
    experiment = store.experiment(experiment_id)
    return run_settings(experiment["config"], experiment["environment"], tool_versions(store, experiment_id))


def provenance(store: Store, experiment_id: str) -> dict[str, Any]:
    """Tool versions, prompt hashes and model roles the results came from."""
    experiment = store.experiment(experiment_id)
    tools = tool_versions(store, experiment_id)
    prompts: dict[str, str] = {}
    stage_provenance: dict[str, str] = {}
    for attempt in store.attempts(experiment_id):
        prompts.update(attempt.prompt_hashes)
        card = store.scorecard(attempt.id)
        if card is not None:
            for stage in card.stages:
                for key, value in stage.provenance.items():
                    stage_provenance[f"{stage.stage}.{key}"] = value
    config = experiment["config"]
    return {
        "experiment": experiment_id,
        "control": bool(experiment["is_control"]),
        "kind": _run_kind(config),
        "environment": experiment["environment"],
        "models": {"generator": config.get("models"), "helper": config.get("helper"), "judge": config.get("judge")},
        "tool_versions": tools,
        "scoring_provenance": stage_provenance,
        "prompt_hashes": prompts,
        "settings": run_settings(config, experiment["environment"], tools),
    }


def run_settings(config: dict[str, Any], environment: dict[str, Any] | None = None,
                 tool_versions: dict[str, str] | None = None) -> dict[str, Any]:
    """Every setting of a run that decides its results, from its stored config (an old one's scalars read as
    one-value lists) and environment: the report header, provenance.json, ``sysmo trace`` and ``sysmo view``."""
    environment = environment or {}
    lists = {name: factor_values(name, config.get(name, factor.default)) for name, factor in ARM_FACTORS.items()}
    tasks = {k: v for k, v in (config.get("tasks") or {}).items() if v not in (None, [], "all")}
    models = [m if isinstance(m, str) else f"{m.get('model')} ({m.get('api_base')})" if m.get("api_base")
              else m.get("model") for m in config.get("models") or []]
    timeout = config.get("attempt_timeout")
    return {
        "agents": list(config.get("agents") or []),
        "models": models,
        "helper": config.get("helper"),
        "judge": config.get("judge"),
        "tasks": tasks,
        "samples": config.get("samples"),
        "arms": [arm.label for arm in expand_arms(lists)],
        **{name: values for name, values in lists.items()},
        "seed": config.get("seed", 0),
        "sample_seeds": ("derived from (seed, task, sample): the same in every arm, sent with every model "
                         "call whose provider takes one (each call records what its provider received)"),
        "max_tokens": config.get("max_tokens"),
        "attempt_timeout_s": (timeout or "none") if timeout is not None else "none (run before the limit existed)",
        "scoring_mode": config.get("scoring_mode", "sysmo"),
        "score": config.get("score", True),
        "scoring": config.get("scoring") or {},
        "checkpoints": config.get("checkpoints", "steps"),
        "executor": config.get("executor", "local"),
        "isolation": environment.get("tool_isolation"),
        "versions": {**{k: environment[k] for k in ("sysmo", "python") if k in environment},
                     **(tool_versions or {})},
    }


def settings_lines(settings: dict[str, Any]) -> list[tuple[str, str]]:
    """``run_settings`` as (name, text) pairs, for a header."""
    def text(value: Any) -> str:
        if isinstance(value, list):
            return ", ".join(ARM_FACTORS["strategy"].text(v) if v is None else str(v) for v in value) or "-"
        if isinstance(value, dict):
            return ", ".join(f"{k}={text(v)}" for k, v in value.items()) or "-"
        return "-" if value is None else str(value)

    return [(name, "; ".join(value) if name == "arms" else text(value)) for name, value in settings.items()]


def provenance_json(store: Store, experiment_id: str) -> str:
    return json.dumps(provenance(store, experiment_id), indent=2, default=str)
