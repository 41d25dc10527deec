"""Report tables a person reads at a glance: one leaderboard per task kind, an error breakdown, and one glossary
line per column saying what it measures and over what.

A leaderboard holds only its kind's numbers: pass@k after repair (pass@1 with its 95% CI), pass@k first answer
parses (OODEval's single-shot), pass@1 first answer passes, the kind's stage headline values, best-of-n (with "k of
N tasks" when some task has no scored sample), errors, mean rounds and cost, sorted best first. Every column name
is defined once, with its denominator, in ``sysmo.evals.glossary``. The wide tables (every sub-metric, every attempt)
stay in ``summary.csv`` / ``attempts.csv`` and their Parquet twins.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sysmo.evals.error_kinds import ERROR_KINDS, error_kind
from sysmo.evals.glossary import glossary_lines
from sysmo.evals.metric_scales import metric_scale
from sysmo.evals.tables import FIRST_ANSWER_PASSES, display_name

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

def _stages_of(summary: pd.DataFrame, kind: str) -> list[str]:
    known = STAGE_ORDER.get(kind, [])
    present = [c for c in summary.columns if "." not in c and not c.endswith(" CI") and summary[c].notna().any()
               and c not in {"agent", "model", "kind", "tasks", "samples", "pass_rate_ci", "mean rounds to pass",
                             "cost $", "spent $", "tokens", "wall s"} and "pass@" not in c and not c.startswith("best-of-n")]
    return [s for s in known if s in present] + sorted(s for s in present if s not in known)


def error_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (agent, model, kind): samples (the group's attempts), errors, and errors by kind (model, budget,
    infrastructure)."""
    if frame.empty:
        return pd.DataFrame()
    data = frame.assign(error_kind=[error_kind(s, e) for s, e in zip(frame["status"], frame.get("error", [None] * len(frame)))])
    rows = []
    for (agent, model, kind), group in data.groupby(["agent", "model", "kind"], sort=True):
        row = {"agent": agent, "model": model, "kind": kind, "samples": len(group),
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
             .groupby(["kind_of_error", "message"]).size().reset_index(name="attempts ended")
             .sort_values("attempts ended", ascending=False).head(limit))
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
        # pass@k after repair, then first answer parses, then first answer passes (pass@1 only), each by k
        passk = sorted((c for c in group.columns if "pass@" in c and c != "pass@1" and not c.endswith(" CI")
                        and not (c.startswith(FIRST_ANSWER_PASSES) and c != f"{FIRST_ANSWER_PASSES}pass@1")),
                       key=lambda c: (not c.startswith("pass@"), c.split("pass@")[0],
                                      int(c.rsplit("@", 1)[1]) if c.rsplit("@", 1)[1].isdigit() else 0))
        best = [c for c in group.columns if c.startswith("best-of-n") and c != "best-of-n tasks"]
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
                counted = r.get("best-of-n tasks")
                short = pd.notna(r[c]) and pd.notna(counted) and int(counted) < int(r["tasks"])
                row[c] = f"{r[c]:.3f} ({int(counted)} of {int(r['tasks'])} tasks)" if short else r[c]
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
    """One line per column of the leaderboards: its name, what it measures and over what (``evals.glossary``)."""
    columns = [col for table in boards.values() for col in table.columns]
    return glossary_lines(columns, stages=columns)  # a column no entry names is one of its kind's stages


def errored_groups_note(frame: pd.DataFrame) -> str | None:
    """A sentence naming the groups whose pass@1 includes errored attempts (None when no attempt errored)."""
    counts = error_counts(frame)
    if counts.empty or not counts["errors"].any():
        return None
    parts = [f"{r.agent} / {r.model} / {r.kind}: {r.errors} of {r.samples}" for r in counts.itertuples() if r.errors]
    return ("Errored attempts count as not passed in pass@1 after repair; they are failures of the run, not necessarily of the "
            "model (see the error breakdown): " + "; ".join(parts) + ".")
