"""Report tables a person reads at a glance: one leaderboard per task kind, an error breakdown, and one line per
metric saying what it measures.

A leaderboard holds only its kind's numbers: pass@k (pass@1 with its 95% CI), the kind's stage headline values,
best-of-n, errors, mean rounds and cost, sorted best first. The wide tables (every sub-metric, every attempt)
stay in ``summary.csv`` / ``attempts.csv`` and their Parquet twins.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sysmo.evals.error_kinds import ERROR_KINDS, error_kind
from sysmo.evals.metric_scales import metric_scale
from sysmo.evals.tables import display_name

# stage order per kind (stages of another kind never show in a kind's table); unknown stages follow
STAGE_ORDER = {
    "tla": ["syntax", "runtime", "conformance", "invariants"],
    "sysml": ["validity", "text", "sysmeval", "elements"],
    "uml_class": ["syntax", "clue"],
    "architecture": ["validity", "structure", "judge", "antipatterns"],
}

# sub-metrics a kind's leaderboard shows beside its stage values (when present), e.g. R2ABench's headline numbers
HEADLINE_SUBMETRICS = {
    "architecture": ["structure.node_f1", "structure.edge_f1", "structure.ged_acc", "judge.mean"],
}

METRIC_MEANINGS = {
    "pass@1": "share of samples whose final artifact passed the agent's tool check (unbiased pass@k with k=1), "
              "errored attempts counted as not passed; 95% bootstrap CI over tasks",
    "pass@k": "chance that at least one of k samples of a task passes (unbiased estimator over the n samples)",
    "single-shot pass@k": "as pass@k, counting a sample when its first answer, before any feedback, is accepted "
                          "by the language's parser (OODEval's protocol)",
    "best-of-n": "each task's best sample by the kind's selection metric, averaged over tasks",
    "errors": "attempts that could not run to their end, by cause: model (the model call failed for good), "
              "budget (a cost or token cap), infrastructure (a tool, the sandbox or the harness)",
    "rounds": "mean rounds to a pass over the attempts that passed (1 = the first answer passed)",
    "spent $": "new money the group's model calls spent (cached replies and offline providers cost nothing)",
    "incl. cached at list price $": "what the group's replies cost at the models' list prices, cached replies "
                                    "included (what the run would cost without the cache)",
    "syntax": "TLA+: 0.5 x (SANY accepts the whole module) + 0.5 x share of units accepted; class diagrams: 1 "
              "when PlantUML and the lint rules accept the diagram",
    "runtime": "TLA+: share of actions covered without error over seeded TLC simulations",
    "conformance": "TLA+: share of the system's recorded traces the spec accepts (trace validation)",
    "invariants": "TLA+: share of the task's invariant templates that TLC finds holding",
    "validity": "1 when the tool (OpenSysML for SysML v2, PlantUML for architecture) accepts the model",
    "text": "SysML v2: word-level ROUGE-L against the reference model",
    "sysmeval": "SysML v2: the judge's SysMEval F1 (semantic precision and recall against the reference)",
    "elements": "SysML v2: F1 over the named elements shared with the reference",
    "clue": "class diagrams: CLUE, the weighted match of classes, attributes, methods and relations with the "
            "reference (OODEval)",
    "structure": "architecture: node F1 of the component tree aligned with the reference (R2ABench)",
    "judge": "architecture: the judge's 1-5 rubric mapped to 0-1",
    "structure.node_f1": "architecture: F1 of reference and predicted components after alignment (R2ABench)",
    "structure.edge_f1": "architecture: F1 of dependencies through the aligned components and their containers",
    "structure.ged_acc": "architecture: 100 x (1 - graph edit distance / worst-case cost), R2ABench's GED accuracy",
    "judge.mean": "architecture: the judge's mean rubric score on its 1-5 scale",
    "antipatterns": "architecture: 1 minus the excess of orphan and god components over the reference's",
}


def _stages_of(summary: pd.DataFrame, kind: str) -> list[str]:
    known = STAGE_ORDER.get(kind, [])
    present = [c for c in summary.columns if "." not in c and not c.endswith(" CI") and summary[c].notna().any()
               and c not in {"agent", "model", "kind", "tasks", "samples", "pass_rate_ci", "mean rounds to pass",
                             "cost $", "spent $", "tokens", "wall s"} and "pass@" not in c and not c.startswith("best-of-n")]
    return [s for s in known if s in present] + sorted(s for s in present if s not in known)


def error_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (agent, model, kind): attempts, errors, and errors by kind (model, budget, infrastructure)."""
    if frame.empty:
        return pd.DataFrame()
    data = frame.assign(error_kind=[error_kind(s, e) for s, e in zip(frame["status"], frame.get("error", [None] * len(frame)))])
    rows = []
    for (agent, model, kind), group in data.groupby(["agent", "model", "kind"], sort=True):
        row = {"agent": agent, "model": model, "kind": kind, "attempts": len(group),
               "errors": int((group["status"] == "error").sum())}
        for name in ERROR_KINDS:
            row[f"{name} errors"] = int((group["error_kind"] == name).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def error_messages(frame: pd.DataFrame, limit: int = 20) -> pd.DataFrame:
    """The most frequent error messages with their kind and how many attempts each ended."""
    if frame.empty or "error" not in frame.columns:
        return pd.DataFrame()
    errored = frame[frame["status"] == "error"]
    if errored.empty:
        return pd.DataFrame()
    messages = errored["error"].fillna("(no message)").str.slice(0, 160)
    table = (errored.assign(message=messages, kind_of_error=[error_kind("error", e) for e in errored["error"]])
             .groupby(["kind_of_error", "message"]).size().reset_index(name="attempts")
             .sort_values("attempts", ascending=False).head(limit))
    return table.rename(columns={"kind_of_error": "error kind"}).reset_index(drop=True)


def leaderboards(summary: pd.DataFrame, frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """One display table per task kind (kind -> rows of "agent / model"), sorted by pass@1 then its headline."""
    if summary.empty:
        return {}
    errors = error_counts(frame).set_index(["agent", "model", "kind"]) if not frame.empty else pd.DataFrame()
    out: dict[str, pd.DataFrame] = {}
    for kind, group in summary.groupby("kind", sort=True):
        group = group.dropna(axis=1, how="all")
        stages = _stages_of(group, str(kind))
        # pass@k after repair, then any other pass@k variant (e.g. single-shot), each by k
        passk = sorted((c for c in group.columns if "pass@" in c and c != "pass@1" and not c.endswith(" CI")),
                       key=lambda c: (not c.startswith("pass@"), c.split("pass@")[0],
                                      int(c.rsplit("@", 1)[1]) if c.rsplit("@", 1)[1].isdigit() else 0))
        best = [c for c in group.columns if c.startswith("best-of-n")]
        order = group.sort_values(["pass@1"] + stages[:1], ascending=False, na_position="last")
        rows = []
        for _, r in order.iterrows():
            row: dict[str, object] = {"agent": r["agent"], "model": r["model"], "tasks": int(r["tasks"]),
                                      "samples": int(r["samples"])}
            row[f"{display_name('pass@1')} [95% CI]"] = f"{r['pass@1']:.3f} {r.get('pass_rate_ci', '')}".strip()
            for c in passk:
                row[display_name(c)] = r[c]
            for s in stages + [m for m in HEADLINE_SUBMETRICS.get(str(kind), []) if m in group.columns]:
                ci = r.get(f"{s} CI")
                digits = metric_scale(s).decimals
                row[display_name(s)] = f"{r[s]:.{digits}f} {ci}" if pd.notna(r[s]) and isinstance(ci, str) else r[s]
            for c in best:
                row[c] = r[c]
            key = (r["agent"], r["model"], kind)
            n_errors = int(errors.loc[key, "errors"]) if not errors.empty and key in errors.index else 0
            detail = ", ".join(f"{errors.loc[key, f'{k} errors']} {k}" for k in ERROR_KINDS
                               if n_errors and errors.loc[key, f"{k} errors"]) if n_errors else ""
            row["errors"] = f"{n_errors} ({detail})" if n_errors else "0"
            rounds = r.get("mean rounds to pass")
            row["rounds"] = float(rounds) if rounds is not None and not (isinstance(rounds, float) and np.isnan(rounds)) else None
            row["spent $"] = r.get("spent $")
            row["incl. cached at list price $"] = r.get("cost $")
            rows.append(row)
        out[str(kind)] = pd.DataFrame(rows)
    return out


def metric_lines(boards: dict[str, pd.DataFrame]) -> list[str]:
    """One line per metric shown in the leaderboards: its name and what it measures."""
    shown: list[str] = []
    for table in boards.values():
        for col in table.columns:
            name = "single-shot pass@k" if "single-shot" in col else "pass@1" if col.startswith("pass@1") else \
                "pass@k" if col.startswith("pass@") else "best-of-n" if col.startswith("best-of-n") else \
                col.split(" (")[0]
            if name in METRIC_MEANINGS and name not in shown:
                shown.append(name)
    return [f"{name}: {METRIC_MEANINGS[name]}" for name in shown]


def errored_groups_note(frame: pd.DataFrame) -> str | None:
    """A sentence naming the groups whose pass@1 includes errored attempts (None when no attempt errored)."""
    counts = error_counts(frame)
    if counts.empty or not counts["errors"].any():
        return None
    parts = [f"{r.agent} / {r.model} / {r.kind}: {r.errors} of {r.attempts}" for r in counts.itertuples() if r.errors]
    return ("Errored attempts count as not passed in pass@1; they are failures of the run, not necessarily of the "
            "model (see the error breakdown): " + "; ".join(parts) + ".")
