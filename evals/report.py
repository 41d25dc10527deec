"""``sysmo report``: Markdown and self-contained HTML tables, PNG plots, CSV and Parquet exports of one experiment.

Every report names the tool versions, prompt hashes and model roles it came from, and says loudly when the
experiment is a control (offline providers).
"""

from __future__ import annotations

import base64
import html
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from sysmo.evals.metric_scales import metric_scale  # noqa: E402
from sysmo.evals.plot_style import place_labels, style  # noqa: E402
from sysmo.evals.glossary import definition_of, glossary_lines  # noqa: E402
from sysmo.evals.tables import (  # noqa: E402
    FIRST_ANSWER_PARSES,
    attempts_frame,
    DEFAULT_SELECTION_METRIC,
    breakdown_frame,
    display_name,
    mixes_tool_modes,
    provenance,
    provenance_json,
    rounds_to_success,
    run_settings,
    score_columns,
    settings_lines,
    summary_frame,
)
from sysmo.evals.leaderboard import (  # noqa: E402
    error_counts,
    error_messages,
    errored_groups_note,
    leaderboards,
)
from sysmo.evals.paired import (  # noqa: E402
    CORRECTION_NAMES,
    Pairing,
    baseline_lines,
    display_tables,
    paired_rows,
    rows_frame,
)
from sysmo.evals.provider_params import UnreceivedFactor, unreceived_factors, without_unreceived  # noqa: E402
from sysmo.evals.significance import marked_table, significance_note  # noqa: E402
from sysmo.store import Store  # noqa: E402

PASS_AT_K_NOTE = (
    "Every pass@k uses the unbiased estimator 1 - C(n-c,k)/C(n,k) over the n samples of each task, averaged over "
    "every task of the group (a task with no passing sample counts 0). **pass@k after repair** (sysmo's): a sample "
    "counts when its final artifact passed the tool check, repair rounds included. **pass@k first answer parses "
    "(OODEval)** (OODEval's single-shot pass@k): a sample counts when its first answer, before any feedback, is "
    "accepted by the language's parser (for PlantUML, PlantUML's own verdict, as the OODEval paper). **pass@k first "
    "answer passes**: its first answer passed every check, lint included. The glossary at the end defines every "
    "column with its denominator.")
CONTROL_BANNER = ("CONTROL EXPERIMENT: answers came from offline providers (`reference` returns the gold model, "
                  "`mockllm/...` replays a script). The numbers measure the harness, not any LLM.")

REPLAY_BANNER = ("REPLAY EXPERIMENT: answers are published outputs of real models (`replay/<source>:<model>`), "
                 "replayed round by round; no model was called. Tasks a source has no output for are 'not covered' "
                 "(status not_covered), not failures.")


def _banner(prov: dict) -> str | None:
    if prov["control"]:
        return CONTROL_BANNER
    return REPLAY_BANNER if prov.get("kind") == "replay" else None


NOT_SCORED = "—"  # a cell with no value (a stage not scored), never shown as 0


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def _fmt(value) -> str:
    if _missing(value):
        return NOT_SCORED
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "_(no rows)_\n"
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(_fmt(v).replace("|", "\\|") for v in row.tolist()) + " |")
    return "\n".join(lines) + "\n"


def html_table(frame: pd.DataFrame, why_not_scored: dict[str, str] | None = None) -> str:
    """``frame`` as an HTML table; an empty cell is "—", with the reason its column's stage was not scored
    (``why_not_scored``: stage -> reason) on hover."""
    if frame.empty:
        return "<p><em>(no rows)</em></p>"
    why_not_scored = why_not_scored or {}
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)

    def cell(column: str, value) -> str:
        if not _missing(value):
            return f"<td>{html.escape(_fmt(value))}</td>"
        why = why_not_scored.get(str(column).split(" (")[0].split(".")[0])
        title = f' title="not scored: {html.escape(why, quote=True)}"' if why else ' title="no value"'
        return f'<td class="not-scored"{title}>{NOT_SCORED}</td>'

    body = "".join("<tr>" + "".join(cell(c, v) for c, v in zip(frame.columns, row.tolist())) + "</tr>"
                   for _, row in frame.iterrows())
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ---------------------------------------------------------------------------------------------- plots
@dataclass(frozen=True)
class Plot:
    """A plot's PNG and the sentence under it in report.md and report.html (what is plotted, how to read it)."""

    path: Path
    caption: str


def plot_heatmaps(summary: pd.DataFrame, folder: Path, errors: pd.DataFrame | None = None) -> list[Plot]:
    """An agents x models heatmap per metric (pass@1 and every cascade stage), one PNG per (metric, kind).

    ``errors`` (``leaderboard.error_counts``): a pass@1 cell of a group with errored attempts says how many.
    A group the metric was not scored for is a blank cell, not 0."""
    errored = {} if errors is None or errors.empty else {
        (r.agent, r.model, r.kind): int(r.errors) for r in errors.itertuples() if r.errors}
    plots: list[Plot] = []
    if summary.empty:
        return plots
    metrics = [c for c in summary.columns
               if (c in ("pass@1", f"{FIRST_ANSWER_PARSES}pass@1") or c in _stage_names(summary)) and "." not in c]
    for kind, group in summary.groupby("kind"):
        for metric in metrics:
            if metric not in group or group[metric].isna().all():
                continue
            table = group.pivot_table(index="agent", columns="model", values=metric, aggfunc="mean")
            fig, ax = plt.subplots(figsize=(2.6 + 1.6 * table.shape[1], 1.6 + 0.5 * table.shape[0]))
            scale = metric_scale(metric)
            low, high = scale.low or 0.0, scale.high or 1.0
            im = ax.imshow(table.values.astype(float), vmin=low, vmax=high, cmap="viridis", aspect="auto")
            ax.set_xticks(range(table.shape[1]), table.columns, rotation=30, ha="right")
            ax.set_yticks(range(table.shape[0]), table.index)
            for i in range(table.shape[0]):
                for j in range(table.shape[1]):
                    v = table.values[i, j]
                    if not np.isnan(v):
                        dark = (v - low) / (high - low) < 0.6
                        n_err = errored.get((table.index[i], table.columns[j], kind), 0) if metric == "pass@1" else 0
                        ax.text(j, i, f"{v:.2f}" + (f"\n({n_err} errored)" if n_err else ""), ha="center",
                                va="center", color="white" if dark else "black", fontsize=8 if n_err else None)
            name = display_name(metric).split(" (")[0] if metric_scale(metric).name != "0-1" else display_name(metric)
            # wrapped to the figure's width (about 11 characters an inch at 10 pt): a title is never cut
            ax.set_title(textwrap.fill(f"{name} ({kind}) per agent and model", width=max(18, int(fig.get_figwidth() * 11))),
                         fontsize=10)
            ax.set_xlabel("model")
            ax.set_ylabel("agent")
            fig.colorbar(im, ax=ax, label=f"{name} ({scale.name})")
            fig.tight_layout()
            path = folder / f"heatmap_{kind}_{_slug(metric)}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            definition = definition_of(name, stages=[name])
            plots.append(Plot(path, (
                f"{name} on {kind} tasks, one cell per agent (row) and model (column), on a {scale.name} scale"
                + (", with the number of errored attempts where there were any" if metric == "pass@1" else "")
                + (f"; denominator: {definition.denominator}" if definition else "")
                + ". A blank cell: not scored for that group (or the group did not run).")))
    return plots


def _stage_names(summary: pd.DataFrame) -> set[str]:
    return {c for c in summary.columns if not c.endswith(" CI") and c not in
            {"agent", "model", "kind", "tasks", "samples", "pass_rate_ci", "cost $", "spent $", "tokens", "wall s",
             "mean rounds to pass"} and not c.startswith(("pass@", "first answer ", "best-of-n"))}


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text).strip("_")


def plot_distributions(frame: pd.DataFrame, folder: Path) -> list[Plot]:
    plots: list[Plot] = []
    for col in score_columns(frame):
        if "." in col[6:] or not metric_scale(col).shown:  # only stage headline values; the rest is in tables
            continue
        data = frame.dropna(subset=[col])  # attempts the stage did not score are left out, not counted as 0
        if data.empty:
            continue
        groups = [(f"{a} / {m}", g[col].values) for (a, m), g in data.groupby(["agent", "model"])]
        fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(groups) + 2), 4.2))
        boxes = ax.boxplot([g for _, g in groups], patch_artist=True, medianprops={"color": "black"})
        for n, box in enumerate(boxes["boxes"]):
            box.set_facecolor(style(n).color)
            box.set_alpha(0.8)
        ax.set_xticks(range(1, len(groups) + 1), [n for n, _ in groups], rotation=35, ha="right", fontsize=7)
        scale = metric_scale(col)
        low, high = scale.low or 0.0, scale.high or 1.0
        ax.set_ylim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        ax.set_title(f"{col[6:]} per attempt, by agent / model", fontsize=10)
        ax.set_ylabel(f"{col[6:]} ({scale.name})")
        ax.set_xlabel("agent / model")
        fig.tight_layout()
        path = folder / f"distribution_{_slug(col[6:])}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        plots.append(Plot(path, (
            f"Distribution of {col[6:]} ({scale.name}) over the attempts of each agent / model: median, quartiles, "
            "whiskers at 1.5 x the interquartile range; attempts the stage did not score are left out.")))
    return plots


def _legend_label(names: list[str], width: int = 44) -> str:
    """Groups that share a curve, joined by " = " and broken into lines of about ``width`` characters (a legend
    of one line per many groups would squeeze the axes to nothing)."""
    lines = [names[0]]
    for name in names[1:]:
        if len(lines[-1]) + 3 + len(name) <= width:
            lines[-1] += f" = {name}"
        else:
            lines[-1] += " ="
            lines.append(name)
    return "\n".join(lines)


def plot_rounds(curves: pd.DataFrame, folder: Path) -> list[Plot]:
    if curves.empty:
        return []
    # identical curves would hide each other: each is drawn once, its legend entry naming every group it is
    drawn: dict[tuple, list[str]] = {}
    for (agent, model), g in curves.groupby(["agent", "model"]):
        g = g.sort_values("round")
        key = (tuple(g["round"]), tuple(round(float(v), 6) for v in g["passed_share"]))
        drawn.setdefault(key, []).append(f"{agent} / {model}")
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    for n, ((rounds, shares), names) in enumerate(drawn.items()):
        look = style(n)
        ax.plot(rounds, shares, marker=look.marker, linestyle=look.linestyle, color=look.color, alpha=0.9,
                markersize=7 - 2 * (n % 2), label=_legend_label(names))
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))  # rounds are whole numbers
    ax.set_xlabel("round (0 = first answer, then one per repair)")
    ax.set_ylabel("share of attempts passed by this round")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title("rounds to success: share of attempts passed by each round", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.tight_layout()
    path = folder / "rounds_to_success.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [Plot(path, ("Share of each agent / model's attempts that had passed by round r (cumulative; round 0 is "
                        "the first answer, each later round one repair). Groups with identical curves share one "
                        "line, named together in the legend."))]


def plot_cost(summary: pd.DataFrame, folder: Path) -> list[Plot]:
    if summary.empty or "pass@1" not in summary:
        return []
    # points are numbered and named in a legend beside the axes; the numbers are placed where they overlap
    # nothing, and points on one spot share one label ("1, 2, 5")
    fig, ax = plt.subplots(figsize=(9, max(4.0, 0.22 * len(summary) + 1.5)))
    at: dict[tuple[float, float], list[str]] = {}
    for n, (_, row) in enumerate(summary.iterrows(), 1):
        look = style(n - 1)
        ax.scatter(row["cost $"], row["pass@1"], s=60, color=look.color, marker=look.marker, alpha=0.9,
                   label=f"{n}: {row['agent']} / {row['model']} / {row['kind']}")
        at.setdefault((round(float(row["cost $"]), 6), round(float(row["pass@1"]), 3)), []).append(str(n))
    top = float(summary["cost $"].max())
    ax.set_xlim(-0.05 * (top or 1.0), 1.15 * top if top > 0 else 1.0)  # costs are never negative
    ax.set_xlabel("cost of the group's replies, incl. cached at list price (USD)")
    ax.set_ylabel("pass@1 after repair")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("pass@1 after repair against cost, one point per agent / model / task kind", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.tight_layout()
    place_labels(ax, list(at), [", ".join(numbers) for numbers in at.values()])
    path = folder / "cost_vs_score.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [Plot(path, ("pass@1 after repair of each agent / model / task kind against its cost incl. cached at list "
                        "price "
                        "(its replies at the models' list prices, cached ones included; the money spent is in the "
                        "leaderboards); the numbers on the points are the legend's."))]


# ---------------------------------------------------------------------------------------------- report
def scoring_notes(prov: dict) -> list[str]:
    """One line per stage whose similarity was a fallback for the one asked for (e.g. CLUE without CodeBERT)."""
    scoring = prov.get("scoring_provenance") or {}
    notes = []
    for key, reason in sorted(scoring.items()):
        if key.endswith(".embedding_fallback"):
            stage = key.removesuffix(".embedding_fallback")
            notes.append(f"{stage}: sigma is {scoring.get(f'{stage}.embedding', '?')}, not the requested "
                         f"{scoring.get(f'{stage}.embedding_requested', '?')} — {reason}")
    return notes


def cost_notes(store: Store, experiment_id: str) -> list[str]:
    """One line per model whose calls were counted as $0 for want of a price (a local or unknown model), so
    that no cost column reads as a real $0."""
    return [f"cost $ of {model}: not counted (litellm has no price for it; set price_per_mtok in its role config "
            "to price it)" for model in store.unpriced_models(experiment_id)]


def fork_notes(store: Store, experiment_id: str) -> list[str]:
    """The attempts made by ``sysmo fork``, which no number of the report counts (not samples of the plan)."""
    n = store.query("SELECT COUNT(*) AS n FROM attempts WHERE experiment_id=? AND parent_attempt_id IS NOT NULL",
                    (experiment_id,))[0]["n"] or 0
    return [f"forks: {n} attempt(s) made by `sysmo fork` are left out of every number here (a fork is not a sample "
            f"of the plan); `sysmo trace {experiment_id} --all` lists them"] if n else []


TOOL_MODE_LABELS = {"native": "native tool calls", "text": "the text protocol"}


def tool_mode_notes(store: Store, experiment_id: str) -> list[str]:
    """One line per (agent, model) whose attempts recorded a tool-calling mode (openhands: ``extras["tool_mode"]``,
    docs/agents/openhands.md): how many of its attempts ran with native tool calls and how many with the text
    protocol, so a comparison across models says which mode each ran in. Forks are left out, as everywhere."""
    rows = store.query(
        "SELECT agent, model, json_extract(attempt_json, '$.extras.tool_mode') AS mode, COUNT(*) AS n FROM attempts"
        " WHERE experiment_id = ? AND parent_attempt_id IS NULL AND mode IS NOT NULL"
        " GROUP BY agent, model, mode ORDER BY agent, model, mode", (experiment_id,))
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        counts.setdefault((r["agent"], r["model"]), {})[r["mode"]] = r["n"]
    notes = []
    for (agent, model), modes in counts.items():
        total = sum(modes.values())
        shares = ", ".join(f"{TOOL_MODE_LABELS.get(mode, mode)} in {n} of {total} attempts" for mode, n in modes.items())
        notes.append(f"tool calling of {agent} on {model}: {shares} (`sysmo trace` shows each attempt's mode and why)")
    return notes


def not_scored_reasons(store: Store, experiment_id: str) -> dict[str, str]:
    """Stage -> why it was not scored for some attempts (its most frequent reason of its own, e.g. no judge
    model): the hover text of its "—" cells."""
    rows = _skipped_stage_rows(store, experiment_id)
    reasons: dict[str, str] = {}
    for r in rows:  # most frequent first within a stage
        reasons.setdefault(r["stage"], r["why"] or "no reason given")
    return reasons


def _skipped_stage_rows(store: Store, experiment_id: str) -> list:
    return store.query(
        "SELECT json_extract(st.value, '$.stage') AS stage, json_extract(st.value, '$.skipped_because') AS why,"
        " COUNT(*) AS n FROM scores sc, json_each(sc.scorecard_json, '$.stages') st"
        " WHERE sc.experiment_id = ? AND json_extract(st.value, '$.outcome') = 'skipped'"
        " AND COALESCE(json_extract(st.value, '$.detail.gated'), 0) = 0"
        " AND COALESCE(json_extract(st.value, '$.detail.optional'), 0) = 0"
        " GROUP BY stage, why ORDER BY stage, n DESC", (experiment_id,))


def skipped_stage_notes(store: Store, experiment_id: str) -> list[str]:
    """One line per stage a scoring cascade skipped for a reason of its own (no judge model, no traces), with
    how many attempts it was skipped for: such a stage has no column, and the reader should know why. Stages
    gated by an earlier stage's failure are the cascade working, not a gap, and are left out; so are optional
    stages where the task gives them nothing to check (``detail.optional``: TLA+ transitions without windows)."""
    scored = store.query("SELECT COUNT(*) AS n FROM scores WHERE experiment_id = ?", (experiment_id,))[0]["n"]
    rows = _skipped_stage_rows(store, experiment_id)
    return [f"{r['stage']}: not scored for {r['n']} of {scored} scored attempts: {r['why'] or 'no reason given'}"
            for r in rows]


def report_notes(store: Store, experiment_id: str, prov: dict | None = None) -> list[str]:
    """What a reader of the numbers must know first (the report's and ``sysmo view``'s): similarity fallbacks,
    stages skipped for a reason of their own, models whose cost was not counted, forks left out, the tool-calling
    mode each (agent, model) ran in."""
    prov = provenance(store, experiment_id) if prov is None else prov
    return (scoring_notes(prov) + skipped_stage_notes(store, experiment_id) + cost_notes(store, experiment_id)
            + fork_notes(store, experiment_id) + tool_mode_notes(store, experiment_id))


LEVELS_NOTE = (
    "Each level of a factor (agent, model, feedback, strategy, temperature, max rounds) against the factor's "
    "baseline, on the (task, sample) pairs both ran with every other factor held fixed: Δ is level minus baseline "
    "with a 95% bootstrap CI; McNemar's exact test on pass after repair, on first answer parses (OODEval's "
    "single-shot: the parser accepted the first answer) and on first answer passes (it passed every check), "
    "Wilcoxon's signed-rank test on the kind's headline score; p-values adjusted ({correction}) across every "
    "comparison of this report. Every number: `paired.csv`; definitions: the glossary below, "
    "docs/paired-analysis.md.")


GLOSSARY_NOTE = ("Every column name of every table above, with its one definition and its denominator (the "
                 "same names in summary.csv, attempts.csv, paired.csv, `sysmo view` and the docs; the CSV/Parquet "
                 "columns each is stored in last).")


def table_headers(markdown: str) -> list[str]:
    """The header cells of every Markdown table in ``markdown``, in order (repeats kept)."""
    lines = markdown.splitlines()
    return [cell.strip() for line, rule in zip(lines, lines[1:]) if line.startswith("| ") and rule.startswith("|---")
            for cell in line.strip().strip("|").split(" | ")]


def _level_columns(table: pd.DataFrame, by: str) -> pd.DataFrame:
    """A breakdown's level columns named ``<by>=<level>`` (``difficulty=2``), so no level reads as a metric."""
    return table.rename(columns={c: f"{by}={c}" for c in table.columns if c not in ("agent", "model")})


BREAKDOWNS = ("benchmark", "domain", "difficulty", "tool_mode")


def pass_rate_breakdowns(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The report's "Pass rate by ..." tables (and ``sysmo view``'s): the pass rate per (agent, model) and task
    attribute; by tool-calling mode only where the attempts mix modes (docs/agents/openhands.md)."""
    return {by: _level_columns(breakdown_frame(frame, by), by) for by in BREAKDOWNS
            if by != "tool_mode" or mixes_tool_modes(frame)}


def experiment_levels(config: dict) -> dict[str, list[str]]:
    """The order an experiment lists its agents and models in (the first of each is the paired baseline)."""
    models = [m if isinstance(m, str) else (m or {}).get("model", "") for m in config.get("models") or []]
    return {"agent": [str(a) for a in config.get("agents") or []], "model": models}


def baseline_text(frame: pd.DataFrame, config: dict, pairing: Pairing | None = None) -> str:
    """``baseline: feedback=none (default); model=... (default)``: what the paired section compares each level
    with ("" when no factor varies)."""
    lines = baseline_lines(frame, pairing, listed=experiment_levels(config))
    return f"baseline: {'; '.join(lines)}" if lines else ""


def what_each_level_buys(frame: pd.DataFrame, config: dict, out: Path, pairing: Pairing | None = None,
                         unreceived: Sequence[UnreceivedFactor] = ()) -> tuple[list[str], str]:
    """The report's paired section, one table per task kind (Markdown lines and HTML), and ``paired.csv``;
    ``pairing``: chosen baselines or every pair of levels (default: each factor's default baseline);
    ``unreceived``: factors a model's provider received as one value in every arm (their rows are left out)."""
    rows = paired_rows(frame, headline={**DEFAULT_SELECTION_METRIC, **(config.get("selection_metric") or {})},
                       listed=experiment_levels(config), pairing=pairing)
    rows = without_unreceived(rows, unreceived, frame)
    if not rows and not unreceived:
        return [], ""
    rows_frame(rows).to_csv(out / "paired.csv", index=False)
    note = LEVELS_NOTE.format(correction=CORRECTION_NAMES["holm"])
    baseline = baseline_text(frame, config, pairing)
    marks = significance_note(CORRECTION_NAMES["holm"])
    md = ["## What each level buys\n", note + "\n", baseline + "\n", f"`{marks}`\n"]
    page = (f"<h2>What each level buys</h2><p>{html.escape(note)}</p><p>{html.escape(baseline)}</p>"
            f"<p>{html.escape(marks)}</p>")
    md += [f"- {u.note()}\n" for u in unreceived]
    page += "".join(f'<p class="unreceived">{html.escape(u.note())}</p>' for u in unreceived)
    for family, table in display_tables(rows).items():
        table = marked_table(table, [r for r in rows if r.family == family])
        md += [f"### {family}\n", markdown_table(table)]
        page += f"<h3>{html.escape(family)}</h3>{html_table(table)}"
    return md, page


def write_report(directory: Path, pairing: Pairing | None = None) -> dict[str, Path]:
    """Write every report file under ``<experiment>/report/``; return their paths by name. ``pairing``: the
    paired section's baselines (``sysmo report --baseline/--all-pairs``; default: each factor's default)."""
    directory = Path(directory)
    experiment_id = directory.name
    store = Store(directory / "results.sqlite")
    try:
        out = directory / "report"
        plots_dir = out / "plots"
        plots_dir.mkdir(parents=True, exist_ok=True)
        experiment = store.experiment(experiment_id)
        config = experiment["config"]
        every = attempts_frame(store, experiment_id)
        # replay: tasks the source has no output for are neither passes nor failures, so no rate counts them
        not_covered = int((every["status"] == "not_covered").sum()) if not every.empty else 0
        frame = every[every["status"] != "not_covered"].reset_index(drop=True) if not_covered else every
        summary = summary_frame(frame, config.get("selection_metric"), ks=(1, 3, config.get("samples") or 5))
        breakdowns = pass_rate_breakdowns(frame)
        settings = run_settings(config, experiment["environment"])
        curves = (rounds_to_success(frame, max(settings["max_rounds"])) if not frame.empty else pd.DataFrame())
        prov = provenance(store, experiment_id)
        level_md, level_html = what_each_level_buys(frame, config, out, pairing,
                                                    unreceived_factors(store, experiment_id))

        paths: dict[str, Path] = {}
        every.to_csv(out / "attempts.csv", index=False)
        summary.to_csv(out / "summary.csv", index=False)
        paths["attempts_csv"], paths["summary_csv"] = out / "attempts.csv", out / "summary.csv"
        try:
            every.to_parquet(out / "attempts.parquet", index=False)
            summary.to_parquet(out / "summary.parquet", index=False)
            paths["attempts_parquet"] = out / "attempts.parquet"
        except (ImportError, ValueError):
            pass
        (out / "provenance.json").write_text(provenance_json(store, experiment_id))
        paths["provenance"] = out / "provenance.json"

        plots = (plot_heatmaps(summary, plots_dir, error_counts(frame)) + plot_distributions(frame, plots_dir) + plot_rounds(curves, plots_dir)
                 + plot_cost(summary, plots_dir))

        title = f"sysmo report: {experiment_id}"
        md = [f"# {title}\n"]
        if _banner(prov):
            md.append(f"> **{_banner(prov)}**\n")
        lines = settings_lines(prov["settings"])
        md.append(f"Attempts: {len(frame)}; arms: {len(prov['settings']['arms'])}.\n")
        md.append("## Settings\n")
        md.append("Every setting of the run (`provenance.json` has them as data; docs/ablations.md: arms).\n")
        md.extend(f"- {name}: `{value}`" for name, value in lines)
        md.append("")
        if not_covered:
            md.append(f"Not covered by the replayed source: {not_covered} attempts (status not_covered), left out of "
                      "every rate and mean below.\n")
        notes = report_notes(store, experiment_id, prov)
        if notes:
            md.append("## Scoring notes\n")
            md.extend(f"> **{note}**\n" for note in notes)
        boards = leaderboards(summary, frame)
        errors_table, messages = error_counts(frame), error_messages(frame)
        errored_note = errored_groups_note(frame)
        md.append("## Leaderboards per task kind\n")
        md.append("Each kind's own metrics only, best first (pass@1, then the first stage). Stage columns are means "
                  "over attempts with 95% bootstrap CIs. Every sub-metric of every group is in `summary.csv` / "
                  "`summary.parquet`, every attempt in `attempts.csv` / `attempts.parquet`. `sysmo view` shows these "
                  f"tables with every number a link to the attempts behind it (page `/e/{experiment_id}/report`).\n")
        md.append(PASS_AT_K_NOTE + "\n")
        if errored_note:
            md.append(f"> **{errored_note}**\n")
        for kind, board in boards.items():
            md.append(f"### {kind}\n")
            md.append(markdown_table(board))
        why_not_scored = not_scored_reasons(store, experiment_id)
        legend = (f"{NOT_SCORED}: no value, never 0: "
                  + "".join(f"{stage}: not scored, {why}; " for stage, why in why_not_scored.items())
                  + "otherwise no attempt to compute it on (rounds: none passed).")
        if any(board.isna().any().any() for board in boards.values()):
            md.append(legend + "\n")
        md.append("What every column measures, and over what: the [glossary](#glossary) at the end.\n")
        md.extend(level_md)  # what each level buys: right after the leaderboards
        md.append("## Errors\n")
        if errors_table.empty or not errors_table["errors"].any():
            md.append("No attempt errored: every attempt ran to its end.\n")
        else:
            md.append(markdown_table(errors_table))
            md.append(markdown_table(messages))
        for by, table in breakdowns.items():
            if not table.empty:
                md.append(f"## Pass rate by {by}\n")
                md.append(markdown_table(table))
        glossary = glossary_lines(table_headers("\n".join(md)), stages=_stage_names(summary))
        md.append("## Glossary\n")
        md.append(GLOSSARY_NOTE + "\n")
        md.extend(f"- {line}" for line in glossary)
        md.append("")
        md.append("## Plots\n")
        md.extend(f"![{p.caption}](plots/{p.path.name})\n\n_{p.caption}_\n" for p in plots)
        md.append("## Provenance\n")
        md.append(f"- models: `{prov['models']}`\n- tool versions: `{prov['tool_versions']}`\n"
                  f"- scoring: `{prov['scoring_provenance']}`\n- prompt hashes: `{prov['prompt_hashes']}`\n"
                  f"- environment: `{prov['environment']}`\n")
        (out / "report.md").write_text("\n".join(md))
        paths["markdown"] = out / "report.md"

        images = "".join(
            f'<figure><img alt="{html.escape(p.caption, quote=True)}" '
            f'src="data:image/png;base64,{base64.b64encode(p.path.read_bytes()).decode()}"/>'
            f"<figcaption>{html.escape(p.caption)}</figcaption></figure>" for p in plots)
        banner = f'<p class="control">{html.escape(_banner(prov) or "")}</p>' if _banner(prov) else ""
        banner += "".join(f'<p class="control">{html.escape(note)}</p>' for note in notes)
        sections = "".join(f"<h2>Pass rate by {by}</h2>{html_table(t)}" for by, t in breakdowns.items() if not t.empty)
        sections += (f"<h2 id=\"glossary\">Glossary</h2><p>{html.escape(GLOSSARY_NOTE)}</p><ul>"
                     + "".join(f"<li>{html.escape(line)}</li>" for line in glossary) + "</ul>")
        page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}}table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}.settings td,.settings th{{text-align:left}}th{{background:#eee}}.control{{background:#fff3cd;
padding:1em;border:1px solid #e0c060;font-weight:bold}}figure{{display:inline-block;margin:0.5em;max-width:640px;vertical-align:top}}figcaption{{font-size:12px;color:#333}}img{{max-width:640px}}
pre{{background:#f6f6f6;padding:1em;overflow:auto;font-size:11px}}</style></head><body>
<h1>{html.escape(title)}</h1>{banner}<p>Attempts: {len(frame)}; arms: {len(prov['settings']['arms'])}.</p>
<h2>Settings</h2><table class="settings"><tbody>{"".join(f"<tr><th>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>"
                                                 for name, value in lines)}</tbody></table><h2>Leaderboards per task kind</h2>
<p>Each kind's own metrics only, best first. Every sub-metric: summary.csv / summary.parquet; every attempt:
attempts.csv / attempts.parquet. <code>sysmo view</code> shows these tables with every number a link to the attempts
behind it (page <code>/e/{html.escape(experiment_id)}/report</code>).</p>
<p>{html.escape(PASS_AT_K_NOTE.replace("**", ""))}</p>{f'<p class="control">{html.escape(errored_note)}</p>' if errored_note else ''}
{"".join(f"<h3>{html.escape(kind)}</h3>{html_table(board, why_not_scored)}" for kind, board in boards.items())}
{f"<p>{html.escape(legend)}</p>" if any(board.isna().any().any() for board in boards.values()) else ""}
<p>What every column measures, and over what: the <a href="#glossary">glossary</a> at the end.</p>
{level_html}
<h2>Errors</h2>{html_table(errors_table) + html_table(messages) if not errors_table.empty and errors_table["errors"].any()
                else "<p>No attempt errored: every attempt ran to its end.</p>"}
{sections}<h2>Plots</h2>{images}<h2>Provenance</h2><pre>{html.escape(provenance_json(store, experiment_id))}</pre>
</body></html>"""
        (out / "report.html").write_text(page)
        paths["html"] = out / "report.html"
        paths["plots"] = plots_dir
        return paths
    finally:
        store.close()
