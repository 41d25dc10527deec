"""Re-score the SysMBench authors' published predictions with our metrics and set the result beside the paper's Table 2.

Data: ``<data>/published/designbench/<model>/<strategy>.jsonl`` (151 predictions each, with the authors'
per-sample scores and raw SysMEval judge answers), ``summary.csv`` (their aggregates and the paper's
Table 2 in %), and ``<data>/sysmbench/sysmbench.jsonl`` for the references. Pairing: each published line
carries the sample ``id`` (upstream folder number); its reference is the ``reference_model`` of that id
(the lines' ``json_index`` is the upstream list position, which is NOT ``id - 1``).

Recomputed here: BLEU (``bleu_paper``: mean sentence BLEU, and corpus BLEU), character-level ROUGE-L
(``rougeL_paper``) and SysMEval P/R/F1 from the stored judge answers with our parser. BERTScore cannot be
recomputed offline with the paper's bert-base-uncased, so the stored mean is shown, labelled "stored".
SysMEval role swap: the stored "P" answer judged the ground truth's claims (semantic recall) and the
stored "R" answer the prediction's (semantic precision); our precision is parsed from their R answer and our
recall from their P answer, and the paper's columns (whose labels carry the swap) are compared with the
matching quantity: paper "SysM-P" with our recall, paper "SysM-R" with our precision.

A cell matches when it is within the paper's rounding: 0.05 points for BLEU (the paper mixes mean sentence
BLEU and corpus BLEU between rows, so either counts), 0.5 points for the other columns; "<0.1" matches
below 0.1. A row with any mismatch is flagged: the stored outputs cannot reproduce it.

>>> rows = table2(Path("/data"))          # the 17 paper models, direct (zero-shot) strategy
>>> [r.paper_model for r in rows if not r.reproduced]
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from sysmo.benchmarks import datadir
from sysmo.errors import DataMissingError
from sysmo.evals.metrics import sysmeval, text
from sysmo.log import get_logger

if TYPE_CHECKING:
    from sysmo.reproduce.replay import ReplayedRun

log = get_logger(__name__)

PUBLISHED_FOLDER = Path("published") / "designbench"
STRATEGIES = ("direct", "few-shot", "cot", "grammar")
BLEU_TOLERANCE_PCT = 0.05
TOLERANCE_PCT = 0.5


class PublishedSample(BaseModel):
    """One line of ``designbench/<model>/<strategy>.jsonl``: a prediction and what the authors stored for it."""

    model_config = ConfigDict(extra="allow")
    id: int
    json_index: int
    model: str
    paper_model: str | None = None
    strategy: str
    prediction: str
    sentence_bleu_score: float
    rouge1_f1: float
    rouge2_f1: float
    rougeL_f1: float
    bertscore: float | None = None
    sysm_eval_p: float | None = None
    sysm_eval_r: float | None = None
    sysm_eval_f1: float | None = None
    sysm_eval_p_response: str | None = None
    sysm_eval_r_response: str | None = None
    sysm_eval_p_score: list[int] | None = None
    sysm_eval_r_score: list[int] | None = None


class SummaryRow(BaseModel):
    """One row of ``designbench/summary.csv`` (fractions, except ``paper_*_pct``, which are Table 2 text in %)."""

    model_config = ConfigDict(extra="allow")
    model: str
    paper_model: str | None = None
    strategy: str
    n: int
    corpus_bleu: float
    sentence_bleu_avg: float
    rougeL_f1_avg: float
    bertscore_avg: float | None = None
    sysm_eval_p_avg: float | None = None
    sysm_eval_r_avg: float | None = None
    sysm_eval_f1_avg: float | None = None
    sysm_eval_f1_harmonic_of_avgs: float | None = None
    sysm_eval_f1_mean_per_sample: float | None = None
    paper_bleu_pct: str | None = None
    paper_rougeL_pct: str | None = None
    paper_bertscore_pct: str | None = None
    paper_sysm_p_pct: str | None = None
    paper_sysm_r_pct: str | None = None
    paper_sysm_f1_pct: str | None = None
    notes: str = ""


def published_dir(data_dir: Path | str | None = None) -> Path:
    """``<data>/published/designbench``; a DataMissingError saying where it was expected otherwise."""
    root = datadir.require_data_dir(data_dir)
    folder = root / PUBLISHED_FOLDER
    if not (folder / "summary.csv").is_file():
        raise DataMissingError(
            f"published SysMBench outputs not found at {folder} (expected summary.csv there): "
            "pass --data-dir pointing at the folder that holds published/ and sysmbench/"
        )
    return folder


def references(data_dir: Path | str | None = None) -> dict[int, str]:
    """Sample id -> ``reference_model`` from ``<data>/sysmbench/sysmbench.jsonl``."""
    path = datadir.dataset_dir(datadir.require_data_dir(data_dir), "sysmbench") / "sysmbench.jsonl"
    out: dict[int, str] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                out[int(row["id"])] = row["reference_model"]
    return out


def samples(folder: Path, model: str, strategy: str) -> list[PublishedSample]:
    path = folder / model / f"{strategy}.jsonl"
    if not path.is_file():
        raise DataMissingError(f"no published predictions at {path}")
    with path.open(encoding="utf-8") as f:
        return [PublishedSample.model_validate_json(line) for line in f if line.strip()]


def _optional_float(value: str | None) -> float | None:
    return float(value) if value not in (None, "") else None


def summary(folder: Path) -> list[SummaryRow]:
    rows = []
    with (folder / "summary.csv").open(encoding="utf-8", newline="") as f:
        for raw in csv.DictReader(f):
            values: dict[str, object] = {k: (v if v != "" else None) for k, v in raw.items()}
            for key in (
                "corpus_bleu",
                "sentence_bleu_avg",
                "rougeL_f1_avg",
                "bertscore_avg",
                "sysm_eval_p_avg",
                "sysm_eval_r_avg",
                "sysm_eval_f1_avg",
                "sysm_eval_f1_harmonic_of_avgs",
                "sysm_eval_f1_mean_per_sample",
            ):
                values[key] = _optional_float(raw.get(key))
            values["notes"] = raw.get("notes") or ""
            rows.append(SummaryRow.model_validate(values))
    return rows


# -- per-sample recomputation


class SampleScores(BaseModel):
    """Our metrics for one published prediction (SysMEval from the stored answers, role-corrected)."""

    id: int
    bleu_paper: float
    rougeL_paper: float
    precision: float | None = (
        None  # parsed from the stored "r" answer (their label), see the module docstring
    )
    recall: float | None = None  # parsed from the stored "p" answer
    precision_score: tuple[float, float] | None = None
    recall_score: tuple[float, float] | None = None


def score_sample(
    sample: PublishedSample, reference: str, *, parse_mode: sysmeval.ParseMode = "robust"
) -> SampleScores:
    scores = SampleScores(
        id=sample.id,
        bleu_paper=text.bleu_paper(reference, sample.prediction),
        rougeL_paper=text.rouge_l_paper(reference, sample.prediction),
    )
    if sample.sysm_eval_r_response is not None and sample.sysm_eval_p_response is not None:
        precision = sysmeval.parse_score(sample.sysm_eval_r_response, parse_mode)
        recall = sysmeval.parse_score(sample.sysm_eval_p_response, parse_mode)
        if precision:
            scores.precision, scores.precision_score = precision.value, (precision.supported, precision.total)
        if recall:
            scores.recall, scores.recall_score = recall.value, (recall.supported, recall.total)
    return scores


class RunScores(BaseModel):
    """Our per-sample scores and aggregates for one model x strategy (fractions)."""

    model: str
    strategy: str
    n: int
    samples: list[SampleScores] = Field(default_factory=list)
    sentence_bleu_avg: float
    corpus_bleu: float | None = None  # None when not asked for (it costs as much as the sentence BLEUs)
    rougeL_paper_avg: float
    bertscore_stored_avg: float | None = None
    judge: sysmeval.PaperAggregate | None = None  # SysMEval from the stored answers


def score_run(
    folder: Path,
    refs: dict[int, str],
    model: str,
    strategy: str,
    corpus: bool = True,
    replies: dict[int, str] | None = None,
    ids: frozenset[int] | None = None,
) -> RunScores:
    """Our scores of one published run. ``replies``: the predictions as replayed through ``sysmo run`` (sample id
    -> the attempt's reply), used instead of the file's (a sample without a replayed reply is an error);
    ``ids``: score only these samples."""
    run = [s for s in samples(folder, model, strategy) if ids is None or s.id in ids]
    if replies is not None:
        missing = sorted(s.id for s in run if s.id not in replies)
        if missing:
            raise DataMissingError(
                f"the replay of {model}/{strategy} has no attempt for samples {missing[:10]}: run it again to resume"
            )
        run = [s.model_copy(update={"prediction": replies[s.id]}) for s in run]
    scored = [score_sample(s, refs[s.id]) for s in run]
    n = len(run)
    stored_bert = [s.bertscore for s in run if s.bertscore is not None]
    judged = all(s.sysm_eval_p_response is not None for s in run)
    return RunScores(
        model=model,
        strategy=strategy,
        n=n,
        samples=scored,
        sentence_bleu_avg=sum(s.bleu_paper for s in scored) / n,
        corpus_bleu=text.corpus_bleu_paper([refs[s.id] for s in run], [s.prediction for s in run])
        if corpus
        else None,
        rougeL_paper_avg=sum(s.rougeL_paper for s in scored) / n,
        bertscore_stored_avg=sum(stored_bert) / len(stored_bert) if stored_bert else None,
        judge=sysmeval.aggregate([(s.precision, s.recall) for s in scored]) if judged else None,
    )


def _score_run_job(args: tuple) -> RunScores:
    return score_run(*args)


# below this many samples (``--id`` picks a few of each run) scoring in this process is quicker than starting a
# pool: each of its processes imports NLTK and SciPy (about 2 s) before scoring ~2 ms a sample
IN_PROCESS_SAMPLES = 1000


def score_runs(
    folder: Path,
    refs: dict[int, str],
    runs: list[tuple[str, str]],
    *,
    corpus: bool = True,
    workers: int | None = None,
    replies: dict[tuple[str, str], dict[int, str]] | None = None,
    ids: frozenset[int] | None = None,
) -> list[RunScores]:
    """``score_run`` for each (model, strategy), in order; on up to ``workers`` processes (default: CPU count, max 4).

    NLTK's BLEU is the slow part (about 2 ms a sample), so separate processes pay off from a few runs on; a few
    samples of each run (``ids``, fewer than ``IN_PROCESS_SAMPLES`` in all) are scored in this process.
    """
    import os

    workers = workers if workers is not None else min(4, os.cpu_count() or 1)
    jobs = [(folder, refs, model, strategy, corpus, (replies or {}).get((model, strategy)) if replies is not None
             else None, ids) for model, strategy in runs]
    few_samples = ids is not None and len(jobs) * len(ids) < IN_PROCESS_SAMPLES
    if workers <= 1 or len(jobs) < 3 or few_samples:
        return [_score_run_job(job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: the caller may hold threads (tool servers, LLM clients) that a fork would copy mid-lock
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_score_run_job, jobs))


# -- Table 2

Column = Literal["BLEU", "ROUGE-L", "BERTScore", "SysM-P", "SysM-R", "SysM-F1"]
COLUMNS: tuple[Column, ...] = ("BLEU", "ROUGE-L", "BERTScore", "SysM-P", "SysM-R", "SysM-F1")
# what each of our numbers is, in the paper's column terms (the paper's P/R labels carry the authors' swap)
COLUMN_SOURCES: dict[Column, str] = {
    "BLEU": "ours: mean NLTK sentence BLEU / corpus BLEU (the paper uses one or the other per row)",
    "ROUGE-L": "ours: character-level ROUGE-L F1 (SysMBench's definition)",
    "BERTScore": "stored: the authors' bert-base-uncased values (not recomputed offline)",
    "SysM-P": "ours: RECALL from the stored judge answers (the paper's 'P' is semantically recall)",
    "SysM-R": "ours: PRECISION from the stored judge answers (the paper's 'R' is semantically precision)",
    "SysM-F1": "ours: harmonic mean of the averaged P and R",
}


class Cell(BaseModel):
    ours: float | None  # percent
    paper: str | None
    alternative: float | None = None  # BLEU: corpus BLEU in percent
    match: bool | None = None  # None: nothing to compare with
    matched_by: str | None = None


class Table2Row(BaseModel):
    model: str
    paper_model: str
    cells: dict[str, Cell] = Field(default_factory=dict)
    staging_notes: str = ""

    @property
    def mismatches(self) -> list[str]:
        return [c for c, cell in self.cells.items() if cell.match is False]

    @property
    def reproduced(self) -> bool:
        return not self.mismatches


def _within(ours: float | None, paper: str | None, tolerance: float) -> bool | None:
    if ours is None or paper is None:
        return None
    if paper.startswith("<"):
        return ours < float(paper[1:])
    return abs(ours - float(paper)) <= tolerance + 1e-9


def _bleu_cell(run: RunScores, paper: str | None) -> Cell:
    sentence = 100 * run.sentence_bleu_avg
    corpus = 100 * run.corpus_bleu if run.corpus_bleu is not None else None
    by_sentence, by_corpus = (
        _within(sentence, paper, BLEU_TOLERANCE_PCT),
        _within(corpus, paper, BLEU_TOLERANCE_PCT),
    )
    matched_by = "sentence" if by_sentence else "corpus" if by_corpus else None
    match = None if by_sentence is None else bool(by_sentence or by_corpus)
    return Cell(ours=sentence, paper=paper, alternative=corpus, match=match, matched_by=matched_by)


def _cell(ours: float | None, paper: str | None) -> Cell:
    pct = 100 * ours if ours is not None else None
    return Cell(ours=pct, paper=paper, match=_within(pct, paper, TOLERANCE_PCT))


def table2_row(run: RunScores, stored: SummaryRow) -> Table2Row:
    agg = run.judge
    return Table2Row(
        model=run.model,
        paper_model=stored.paper_model or run.model,
        staging_notes=stored.notes,
        cells={
            "BLEU": _bleu_cell(run, stored.paper_bleu_pct),
            "ROUGE-L": _cell(run.rougeL_paper_avg, stored.paper_rougeL_pct),
            "BERTScore": _cell(run.bertscore_stored_avg, stored.paper_bertscore_pct),
            "SysM-P": _cell(agg.recall if agg else None, stored.paper_sysm_p_pct),
            "SysM-R": _cell(agg.precision if agg else None, stored.paper_sysm_r_pct),
            "SysM-F1": _cell(agg.f1_harmonic_of_means if agg else None, stored.paper_sysm_f1_pct),
        },
    )


def replayed_runs(
    data_dir: Path | str | None, runs: list[tuple[str, str]], *, output_dir: Path | None = None,
    ids: frozenset[int] | None = None,
) -> dict[tuple[str, str], ReplayedRun]:
    """(model, strategy) -> the attempts of ``replay/designbench:<model>/<strategy>`` in one replay experiment
    through ``sysmo run`` (resumed when it exists)."""
    from sysmo.reproduce.replay import replay_experiment

    names = {f"replay/designbench:{m}/{s}": (m, s) for m, s in runs}
    task_ids = [f"sysmbench/{i}" for i in sorted(ids)] if ids is not None else None
    replayed = replay_experiment(list(names), data_dir=data_dir, output_dir=output_dir, ids=task_ids,
                                 name=f"reproduce-designbench-{len(names)}")
    return {names[name]: run for name, run in replayed.items()}


def replayed_replies(
    data_dir: Path | str | None, runs: list[tuple[str, str]], *, output_dir: Path | None = None,
    ids: frozenset[int] | None = None,
) -> dict[tuple[str, str], dict[int, str]]:
    """(model, strategy) -> sample id -> the reply its replay attempt stored (see ``replayed_runs``)."""
    return {run: replayed.replies() for run, replayed in
            replayed_runs(data_dir, runs, output_dir=output_dir, ids=ids).items()}


def _table2_rows(folder: Path, strategy: str, models: list[str] | None) -> list[SummaryRow]:
    return [r for r in summary(folder)
            if r.strategy == strategy and r.paper_model is not None and r.paper_bleu_pct is not None
            and (models is None or r.model in models)]


def table2_runs(data_dir: Path | str | None = None, *, strategy: str = "direct",
                models: list[str] | None = None) -> list[tuple[str, str]]:
    """The (model, strategy) runs behind Table 2's rows."""
    return [(r.model, strategy) for r in _table2_rows(published_dir(data_dir), strategy, models)]


def table2(
    data_dir: Path | str | None = None,
    *,
    strategy: str = "direct",
    workers: int | None = None,
    via_replay: bool = False,
    models: list[str] | None = None,
    ids: frozenset[int] | None = None,
    output_dir: Path | None = None,
    replayed: dict[tuple[str, str], ReplayedRun] | None = None,
) -> list[Table2Row]:
    """Our numbers beside the paper's Table 2 for every paper model (rows with Table 2 values), in summary order.

    ``via_replay``: the predictions come from attempts of ``replay/designbench:<model>/direct`` run through
    ``sysmo run`` (stored in ``output_dir``), not straight from the files: the same numbers, now linked to
    attempts. ``models`` / ``ids`` restrict the rows / samples; ``replayed`` gives runs already replayed (from
    ``replayed_runs`` over ``table2_runs``), so the caller can link the rows to their attempts."""
    folder = published_dir(data_dir)
    refs = references(data_dir)
    wanted = _table2_rows(folder, strategy, models)
    runs = [(r.model, strategy) for r in wanted]
    if replayed is None and via_replay and runs:
        replayed = replayed_runs(data_dir, runs, output_dir=output_dir, ids=ids)
    replies = {run: r.replies() for run, r in replayed.items()} if replayed is not None else None
    scored = score_runs(folder, refs, runs, workers=workers, replies=replies, ids=ids)
    rows = []
    for stored, run in zip(wanted, scored, strict=True):
        row = table2_row(run, stored)
        log.info("reproduce.table2_row", model=row.model, mismatches=row.mismatches)
        rows.append(row)
    if not rows:
        raise DataMissingError(
            f"no Table 2 rows for strategy {strategy!r} in {folder / 'summary.csv'} "
            "(the paper's Table 2 lists the direct, i.e. zero-shot, strategy only)"
        )
    return rows
