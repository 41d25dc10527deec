"""``sysmo reproduce r2abench``: re-score the published R2ABench predictions and compare with the authors' CSV.

Input: a checkout of the replication package (``luuquangkhai9/R2ABench``), complete or partial:
``Dataset/E-R2A/<lang>/<project>/AD/ad.puml`` (references), ``Output/E-R2A/<workflow>/<model>/<project>/
predicted.puml`` with the judge's node alignment ``judge_alignment_*.json`` beside it, and
``Output/results_e_r2a.csv`` (the authors' per-prediction scores). Every CSV row whose prediction and
reference are present is re-scored: validity always, the L1 columns where a judge alignment lies beside the
prediction (the package writes none for a prediction that fails L0, so its row has validity only); rows whose
files are missing are counted, not guessed. Where a folder holds several judges' alignments, the one the CSV
was computed from (``gpt-5.4-mini``) is used (``reproduce/r2abench_judges.py``; ``--judge-file-model`` chooses);
each row says which (``judge_file_model``, ``notes``).

The stored judge alignment names nodes the way the package's own parser does (``Layer::Node`` paths,
``Global::`` at top level, display names cut at the first bracket). To use it, the deterministic columns are
recomputed on a graph read by ``package_names`` (our reading of the package's naming rules; sysmo's own
parser, ``sysmo.tools.plantuml.architecture``, is the one the cascade uses and is stricter about display
names). Columns, as the package defines them:

- ``l0_valid``: PlantUML renders the prediction (``sysmo.tools.plantuml.check``).
- ``l1_node_coverage``: reference nodes covered by the alignment / (covered + unmatched reference nodes).
- ``l1_gen_precision``: predicted nodes in the alignment / (aligned + unmatched predicted nodes).
- ``l1_edge_precision``/``recall``/``f1``: a predicted edge is right when the nodes its ends align to, or
  their ``::`` ancestors that are reference nodes, form a reference edge.
- ``l1_ged_accuracy``: 100 (1 - GED / worst case), the weighted worst case of ``ged_normaliser``.
- ``l1_orphan_ratio``/``l1_god_ratio``: over the prediction's leaves, edges counted where they name a leaf.

Printed per column: our mean, the published mean, Pearson and Spearman r, mean absolute difference, n, and how
many rows equal the CSV up to its rounding (``ROW_TOLERANCE``); then per model x workflow the means of Table 3's
columns, ours and the CSV's over the same rows (``reproduce/r2abench_groups.py``).

By default (``sysmo reproduce r2abench``) the predictions go through the standard pipeline first:
``replay_predictions`` runs every model x workflow of the CSV that has predictions in the checkout as
``replay/r2abench:<model>/<workflow>`` on the ``srs`` tasks with ``sysmo run``'s machinery (one round, no
repair), stores the attempts like any experiment, and the columns are computed from the replies the attempts
recorded (verbatim: the package scored the raw file) with validity from the attempt's own PlantUML check.
``--from-files`` re-scores the files directly (``rescore`` without replies). The two give the same numbers.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, Field
from scipy import stats

from sysmo.errors import ConfigError
from sysmo.evals.metrics.architecture import REPLICATION_WEIGHTS
from sysmo.reproduce.r2abench_judges import JudgeChoices, choose_judge_file
from sysmo.llm.replay import R2ABENCH_OUTPUT
from sysmo.log import get_logger

log = get_logger(__name__)

RESULTS_CSV = Path("Output") / "results_e_r2a.csv"
DETERMINISTIC = (
    "l0_valid",
    "l1_node_coverage",
    "l1_gen_precision",
    "l1_edge_precision",
    "l1_edge_recall",
    "l1_edge_f1",
    "l1_ged_accuracy",
    "l1_orphan_ratio",
    "l1_god_ratio",
)

_CONTAINER_KINDS = "package|folder|frame|cloud|node|rectangle|component|database|queue|interface"
_NODE_KINDS = "component|database|queue|cloud|node|rectangle|interface"
_NAME = r"(?:\"(?P<q>[^\"]+)\"|\[(?P<b>[^\]]+)\]|(?P<w>[A-Za-z_][\w.-]*))"
_ALIAS = r"(?:\s+as\s+(?P<alias>[A-Za-z_][\w.-]*))?"
_OPEN = re.compile(rf"^\s*(?P<kind>{_CONTAINER_KINDS})\s+{_NAME}{_ALIAS}[^{{]*\{{\s*$", re.I)
_DECL = re.compile(rf"^\s*(?P<kind>{_NODE_KINDS})\s+{_NAME}{_ALIAS}", re.I)
_SHORT = re.compile(r"^\s*\[(?P<b>[^\]]+)\](?:\s+as\s+(?P<alias>[A-Za-z_][\w.-]*))?", re.I)
_ARROW = re.compile(
    r"^\s*(?P<l>.*?)\s*(?:<?[-.]+(?:up|down|left|right)?[-.]*>|<[-.]+|[-.]+)\s*(?P<r>.*?)(?:\s*:\s*.*)?$", re.I
)


class PackageGraph(BaseModel):
    """A diagram as the replication package names it: ``Container::Name`` paths."""

    nodes: list[str] = Field(default_factory=list)
    leaves: list[str] = Field(default_factory=list)
    edges: list[tuple[str, str]] = Field(default_factory=list)


def _clean(value: str) -> str:
    return value.strip().strip('"[](){}').replace("\n", "\\n")


def package_names(text: str) -> PackageGraph:
    """Read a diagram with the package's naming rules (see the module docstring)."""
    text = re.sub(r"/'.*?'/", "", text, flags=re.S)
    text = re.sub(r"'.*$", "", text, flags=re.M)  # the package cuts at any quote mark, apostrophes too
    kinds: dict[str, str] = {}
    declared: set[str] = set()
    names: dict[str, str] = {}
    stack: list[str] = []
    pending: list[tuple[str, str]] = []

    def path(name: str) -> str:
        return f"{'::'.join(stack) if stack else 'Global'}::{_clean(name)}"

    def remember(raw: str, full: str, alias: str | None) -> None:
        clean = _clean(raw)
        for key in (raw, clean, f'"{clean}"', f"[{clean}]", alias):
            if key:
                names[key] = full

    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("@") or line.lower().startswith("skinparam"):
            continue
        if (m := _OPEN.match(line)) is not None:
            name = m.group("q") or m.group("b") or m.group("w")
            kinds.setdefault(path(name), m.group("kind").lower())
            remember(name, path(name), m.group("alias"))
            stack.append(_clean(name))
            continue
        if re.match(r"^\s*}\s*$", line):
            if stack:
                stack.pop()
            continue
        m = _DECL.match(line) or _SHORT.match(line)
        if m is not None:
            groups = m.groupdict()
            name = groups.get("q") or groups.get("b") or groups.get("w") or ""
            full = path(name)
            kinds.setdefault(full, (groups.get("kind") or "component").lower())
            declared.add(full)
            remember(name, full, groups.get("alias"))
            continue
        if (m := _ARROW.match(line)) is not None:
            pending.append((m.group("l").split(":")[0].strip(), m.group("r").split(":")[0].strip()))

    def resolve(raw: str) -> str:
        clean = _clean(raw)
        for key in (raw, clean, f'"{clean}"', f"[{clean}]"):
            if key in names:
                return names[key]
        full = path(clean)
        names[raw] = names[clean] = full
        return full

    edges = []
    for left, right in pending:
        a, b = resolve(left), resolve(right)
        kinds.setdefault(a, "implicit")
        kinds.setdefault(b, "implicit")
        edges.append((a, b))
    nodes = sorted(kinds)

    def childless(node: str) -> bool:
        return not any(other.startswith(f"{node}::") for other in nodes)

    leaves = [n for n in nodes if n in declared and childless(n)] or [n for n in nodes if childless(n)]
    return PackageGraph(nodes=nodes, leaves=sorted(leaves), edges=edges)


def _pairs(alignment: dict) -> list[tuple[list[str], list[str], bool]]:
    out = []
    for pair in alignment.get("matched_pairs") or []:
        if isinstance(pair, dict) and isinstance(pair.get("gt_nodes"), list):
            preds = [str(p).replace("\n", "\\n") for p in pair.get("predicted_nodes") or []]
            out.append(([str(g) for g in pair["gt_nodes"]], preds, bool(pair.get("is_boundary_correct", False))))
    return out


def _scan(alignment: dict, key: str, flag: str) -> tuple[int, int] | None:
    """(flagged, total) of a per-node scan list (``reference_node_coverage`` / ``predicted_node_grounding``)."""
    scan = alignment.get(key)
    if not isinstance(scan, list):
        return None
    items = [item for item in scan if isinstance(item, dict)]
    return sum(bool(item.get(flag)) for item in items), len(items)


def node_scores(alignment: dict) -> tuple[float, float]:
    """(node coverage, generation precision) from a stored alignment.

    The judge answers in one of two shapes: pairs only (``matched_pairs`` plus the unmatched lists), or, as the
    package's current prompt asks and most OpenHands/MetaGPT answers do, per-node scans as well
    (``reference_node_coverage`` with ``covered`` flags, ``predicted_node_grounding`` with ``grounded`` flags).
    As in the package, a scan list wins over the pairs for its side: coverage = covered / scanned reference
    nodes, precision = grounded / scanned predicted nodes.
    """
    pairs = _pairs(alignment)
    reference = _scan(alignment, "reference_node_coverage", "covered")
    if reference is None:
        covered = len({g for gts, _, _ in pairs for g in gts})
        reference = covered, covered + len(alignment.get("unmatched_gt_nodes") or [])
    generated = _scan(alignment, "predicted_node_grounding", "grounded")
    if generated is None:
        grounded = len({p for _, preds, _ in pairs for p in preds})
        generated = grounded, grounded + len(alignment.get("unmatched_predicted_nodes") or [])
    return (reference[0] / reference[1] if reference[1] else 0.0, generated[0] / generated[1] if generated[1] else 0.0)


def edge_scores(alignment: dict, reference: PackageGraph, predicted: PackageGraph) -> tuple[float, float, float]:
    to_ref: dict[str, list[str]] = {}
    for gts, preds, _ in _pairs(alignment):
        for p in preds:
            to_ref[p] = gts  # a later pair replaces an earlier one, as in the package
    ref_nodes, ref_edges = set(reference.nodes), set(reference.edges)

    def lifted(node: str) -> set[str]:
        parts = node.split("::")
        prefixes = ("::".join(parts[:i]) for i in range(1, len(parts)))
        return {node} | {c for p in prefixes for c in (p, f"Global::{p}") if c in ref_nodes}

    hits, covered = 0, set()
    for src, dst in predicted.edges:
        found = next(
            (
                (a, b)
                for g_src in to_ref.get(src, [])
                for g_dst in to_ref.get(dst, [])
                for a in lifted(g_src)
                for b in lifted(g_dst)
                if (a, b) in ref_edges
            ),
            None,
        )
        if found is not None:
            hits += 1
            covered.add(found)
    precision = hits / len(predicted.edges) if predicted.edges else 0.0
    recall = len(covered) / len(reference.edges) if reference.edges else 0.0
    return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)


def ged_accuracy(alignment: dict, reference: PackageGraph, predicted: PackageGraph) -> float:
    w = REPLICATION_WEIGHTS
    gt_to_pred: dict[str, set[str]] = {}
    pred_to_gt: dict[str, set[str]] = {}
    mapped_gt: set[str] = set()
    boundary_errors = 0
    for gts, preds, boundary_ok in _pairs(alignment):
        targets = set(preds)
        for g in gts:
            mapped_gt.add(g)
            if targets:
                gt_to_pred.setdefault(g, set()).update(targets)
                for p in targets:
                    pred_to_gt.setdefault(p, set()).add(g)
        if targets and not boundary_ok:
            boundary_errors += len(gts)
    mapped_pred = set(pred_to_gt)
    pred_edges, ref_edges = set(predicted.edges), set(reference.edges)
    missing = {
        (s, d)
        for s, d in reference.edges
        if not (gt_to_pred.get(s, {s}) & gt_to_pred.get(d, {d}))
        and not any((a, b) in pred_edges for a in gt_to_pred.get(s, {s}) for b in gt_to_pred.get(d, {d}))
    }
    extra = {
        (s, d)
        for s, d in predicted.edges
        if not any((a, b) in ref_edges for a in pred_to_gt.get(s, {s}) for b in pred_to_gt.get(d, {d}))
    }
    ged = (
        len(set(reference.nodes) - mapped_gt) * w.missing_node
        + len(set(predicted.nodes) - mapped_pred) * w.hallucinated_node
        + boundary_errors * w.boundary_error
        + len(missing) * w.missing_edge
        + len(extra) * w.extra_edge
    )
    worst = (
        len(reference.nodes) * (w.missing_node + w.boundary_error)
        + len(predicted.nodes) * w.hallucinated_node
        + len(reference.edges) * w.missing_edge
        + len(predicted.edges) * w.extra_edge
    )
    return 100.0 if worst == 0 else max(0.0, 100.0 * (1.0 - ged / worst))


def antipattern_ratios(graph: PackageGraph) -> tuple[float, float]:
    leaves = graph.leaves or graph.nodes
    degree = dict.fromkeys(leaves, 0)
    for src, dst in graph.edges:
        for end in (src, dst):
            if end in degree:
                degree[end] += 1
    if not degree:
        return 0.0, 0.0
    values = list(degree.values())
    orphan = sum(v == 0 for v in values) / len(values)
    if len(values) < 2:
        return orphan, 0.0
    mean = sum(values) / len(values)
    limit = mean + 2 * math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return orphan, sum(v > limit and v > 2 for v in values) / len(values)


# how far our value may sit from the CSV's for a row to count as reproduced: the CSV rounds the 0-1 columns to
# 4 decimals and GED accuracy to 2 (half a unit of the last place, plus slack for float noise)
ROW_TOLERANCE = {"l0_valid": 1e-9, "l1_ged_accuracy": 0.006}
ROW_TOLERANCE_DEFAULT = 1e-4


def row_tolerance(column: str) -> float:
    return ROW_TOLERANCE.get(column, ROW_TOLERANCE_DEFAULT)


class ColumnComparison(BaseModel):
    column: str
    n: int
    within_rounding: int = 0  # rows whose value equals the CSV's up to row_tolerance(column)
    ours: float | None
    published: float | None
    pearson: float | None
    spearman: float | None
    mean_abs_diff: float | None


class Reproduction(BaseModel):
    rows_in_csv: int
    rescored: int
    missing: int
    columns: list[ColumnComparison]
    per_row: list[dict[str, object]] = Field(default_factory=list)
    experiment_dir: str | None = None  # the replay experiment the predictions went through (None: the files)
    missing_rows: list[dict[str, str]] = Field(default_factory=list)  # CSV rows not re-scored, and why
    judges: JudgeChoices = Field(default_factory=JudgeChoices)  # which judge's alignments were used


Key = tuple[str, str, str]  # (workflow, model, project)


class ReplayedPrediction(BaseModel):
    """One published prediction as a replayed attempt recorded it."""

    attempt_id: str
    status: str
    reply: str | None = None  # the round's reply, verbatim
    valid: bool | None = None  # the attempt's own PlantUML verdict on it


class ReplayRun(BaseModel):
    experiment_dir: str
    predictions: dict[str, ReplayedPrediction] = Field(default_factory=dict)  # "workflow/model/project" ->

    def get(self, key: Key) -> ReplayedPrediction | None:
        return self.predictions.get("/".join(key))


@contextlib.contextmanager
def _checkout_env(root: Path) -> Iterator[None]:
    """Point ``$SYSMO_R2ABENCH_DIR`` at ``root`` for the tasks and the replay source, then put it back."""
    before = os.environ.get("SYSMO_R2ABENCH_DIR")
    os.environ["SYSMO_R2ABENCH_DIR"] = str(root)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SYSMO_R2ABENCH_DIR", None)
        else:
            os.environ["SYSMO_R2ABENCH_DIR"] = before


def results_rows(root: Path) -> list[dict[str, str]]:
    csv_path = root / RESULTS_CSV
    if not csv_path.is_file():
        raise ConfigError(f"no {RESULTS_CSV} under {root}: point --data-dir at a checkout of luuquangkhai9/R2ABench")
    csv.field_size_limit(sys.maxsize)
    with csv_path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _prediction_folder(root: Path, workflow: str, model: str, project: str) -> Path:
    return root / R2ABENCH_OUTPUT / workflow / model / project


def replay_predictions(root: Path, *, output_dir: Path | None = None, concurrency: int = 2) -> ReplayRun:
    """Run (or resume) every model x workflow of the CSV that has predictions in ``root`` as a replay experiment
    on the ``srs`` tasks; the replies and verdicts its attempts recorded.

    The experiment id digests the replay sources' labels, which digest the predictions present, so a fuller or
    changed checkout gets a new experiment and the same one resumes the stored attempts.
    """
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.reproduce.replay import default_output_dir
    from sysmo.llm.replay import ReplayProvider
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    output = root / R2ABENCH_OUTPUT
    pairs = sorted({(r["workflow"], r["model_id"]) for r in results_rows(root)
                    if any((output / r["workflow"] / r["model_id"]).glob("*/predicted.puml"))})
    if not pairs:
        raise ConfigError(f"no prediction of a {RESULTS_CSV} row under {output}")
    models = [f"replay/r2abench:{model}/{workflow}" for workflow, model in pairs]
    with _checkout_env(root):
        labels = [ReplayProvider.from_name(m).source.label for m in models]
        digest = hashlib.sha256("\n".join(sorted(labels)).encode()).hexdigest()[:10]
        config = ExperimentConfig(
            id=f"reproduce-r2abench-{digest}", output_dir=output_dir or default_output_dir(), agents=["base_modeling"],
            models=models, samples=1, max_rounds=0, score=False, checkpoints="none", concurrency=concurrency,
            tasks=TaskSelection(benchmarks=["r2abench"], ablations=["srs"]),
        )
        directory = config.directory()
        summary = run_experiment(config, progress=False, resume=(directory / "results.sqlite").is_file())
    log.info("reproduce.r2abench.replayed", experiment=summary.experiment_id, ran=summary.ran, sources=labels)
    run = ReplayRun(experiment_dir=str(directory))
    by_model = {m: pair for m, pair in zip(models, pairs, strict=True)}
    store = Store(directory / "results.sqlite")
    try:
        for attempt in store.attempts(summary.experiment_id):
            workflow, model = by_model[attempt.model]
            project = attempt.task_id.split("/")[1]
            first = attempt.rounds[0] if attempt.rounds else None
            run.predictions[f"{workflow}/{model}/{project}"] = ReplayedPrediction(
                attempt_id=attempt.id, status=attempt.status.value, reply=first.response if first else None,
                valid=first.check.ok if first is not None and first.check is not None else None,
            )
    finally:
        store.close()
    return run


def _structural(alignment: dict, ref_path: Path, text: str) -> dict[str, float | None]:
    """The L1 columns of one prediction from its stored alignment."""
    reference, predicted = package_names(ref_path.read_text(encoding="utf-8")), package_names(text)
    coverage, gen_precision = node_scores(alignment)
    edge_p, edge_r, edge_f1 = edge_scores(alignment, reference, predicted)
    orphan, god = antipattern_ratios(predicted)
    return {
        "l1_node_coverage": coverage,
        "l1_gen_precision": gen_precision,
        "l1_edge_precision": edge_p,
        "l1_edge_recall": edge_r,
        "l1_edge_f1": edge_f1,
        "l1_ged_accuracy": ged_accuracy(alignment, reference, predicted),
        "l1_orphan_ratio": orphan,
        "l1_god_ratio": god,
    }


def _references(root: Path) -> dict[str, Path]:
    return {p.parent.parent.name: p for p in sorted((root / "Dataset").glob("E-R2A/*/*/AD/ad.puml"))}


def _float(value: str | None) -> float | None:
    if value is None or value.strip() == "":
        return None
    if value.strip().upper() in ("TRUE", "FALSE"):
        return 1.0 if value.strip().upper() == "TRUE" else 0.0
    try:
        return float(value)
    except ValueError:
        return None


def _r(fn, xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return float(fn(xs, ys)[0])


def rescore(root: Path, validity: bool = True, replayed: ReplayRun | None = None,
            judge_file_model: list[str] | None = None) -> Reproduction:
    """Re-score every CSV row whose prediction, alignment and reference are in the checkout ``root``.

    With ``replayed`` the prediction is the reply its replayed attempt recorded and validity that attempt's own
    PlantUML verdict; without, the file is read and (``validity``) rendered here. ``judge_file_model``: the judges
    whose stored alignments may be used, in order (default ``r2abench_judges.JUDGE_PREFERENCE``).
    """
    rows = results_rows(root)
    judges = JudgeChoices(preferred=list(judge_file_model or []))
    refs = _references(root)
    check = None
    if validity and replayed is None:
        from sysmo.tools.plantuml import check
    pairs: dict[str, list[tuple[float, float]]] = {c: [] for c in DETERMINISTIC}
    per_row: list[dict[str, object]] = []
    missing_rows: list[dict[str, str]] = []

    def skip(row: dict[str, str], why: str) -> None:
        missing_rows.append({"workflow": row["workflow"], "model": row["model_id"], "project": row["sample_id"], "why": why})

    for row in rows:
        key = (row["workflow"], row["model_id"], row["sample_id"])
        folder = _prediction_folder(root, *key)
        predicted_path, ref_path = folder / "predicted.puml", refs.get(row["sample_id"])
        if ref_path is None:
            skip(row, "no reference (Dataset/E-R2A/*/<project>/AD/ad.puml) in the checkout")
            continue
        if not predicted_path.is_file():
            skip(row, "no predicted.puml in the checkout")
            continue
        attempt = replayed.get(key) if replayed is not None else None
        if replayed is not None and (attempt is None or attempt.reply is None):
            skip(row, f"not replayed ({attempt.status if attempt else 'no attempt'}): the project has no srs task "
                      "(checked_srs.md) in the checkout")
            continue
        text = attempt.reply if attempt is not None else predicted_path.read_text(encoding="utf-8")
        ours: dict[str, float | None] = dict.fromkeys(DETERMINISTIC)
        if attempt is not None:
            ours["l0_valid"] = None if attempt.valid is None else float(attempt.valid)
        else:
            ours["l0_valid"] = (1.0 if check(text).ok else 0.0) if check is not None else None
        choice = choose_judge_file(folder, judge_file_model)
        if choice.path is not None:
            ours.update(_structural(json.loads(choice.path.read_text(encoding="utf-8")), ref_path, text))
        elif ours["l0_valid"] is None:
            skip(row, "no judge alignment beside the prediction and validity not checked" if not choice.present
                 else f"no alignment of --judge-file-model {' '.join(judge_file_model or [])} and validity not checked")
            continue
        judges.add("/".join(key), choice)
        record: dict[str, object] = {"sample_id": row["sample_id"], "workflow": row["workflow"], "model": row["model_id"],
                                     "attempt_id": attempt.attempt_id if attempt is not None else None,
                                     "judge_file_model": choice.judge, "notes": choice.note}
        for column, value in ours.items():
            published = _float(row.get(column))
            record[column] = value
            record[f"published_{column}"] = published
            if value is not None and published is not None:
                pairs[column].append((value, published))
        per_row.append(record)
    columns = []
    for column, values in pairs.items():
        xs, ys = [a for a, _ in values], [b for _, b in values]
        n = len(values)
        columns.append(
            ColumnComparison(
                column=column,
                n=n,
                within_rounding=sum(abs(a - b) <= row_tolerance(column) for a, b in values),
                ours=sum(xs) / n if n else None,
                published=sum(ys) / n if n else None,
                pearson=_r(stats.pearsonr, xs, ys),
                spearman=_r(stats.spearmanr, xs, ys),
                mean_abs_diff=sum(abs(a - b) for a, b in values) / n if n else None,
            )
        )
    judges.log_warning()
    log.info("reproduce.r2abench", rows=len(rows), rescored=len(per_row), missing=len(missing_rows),
             replayed=replayed is not None, judges=judges.used)
    return Reproduction(rows_in_csv=len(rows), rescored=len(per_row), missing=len(missing_rows), columns=columns,
                        per_row=per_row, experiment_dir=replayed.experiment_dir if replayed is not None else None,
                        missing_rows=missing_rows, judges=judges)


def reproduce(root: Path, *, from_files: bool = False, validity: bool = True, output_dir: Path | None = None,
              concurrency: int = 2, judge_file_model: list[str] | None = None) -> Reproduction:
    """``sysmo reproduce r2abench``: through the replay experiment (default) or straight from the files."""
    if from_files:
        return rescore(root, validity=validity, judge_file_model=judge_file_model)
    return rescore(root, replayed=replay_predictions(root, output_dir=output_dir, concurrency=concurrency),
                   judge_file_model=judge_file_model)
