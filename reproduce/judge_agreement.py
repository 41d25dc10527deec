"""Judge against deterministic metrics: does SysMEval's LLM judge agree with OpenSysML validity and element F1?

Over every stored DesignBench prediction with a stored SysMEval judge answer (33 model x strategy runs, 151
each), the judge's per-sample F1 (parsed from the stored answers, roles corrected) is set against sysmo's
deterministic element F1 and validity (one OpenSysML load per prediction): Spearman's rho per sample, and
Kendall's tau between the model rankings (runs ordered by mean judge F1 vs by mean element F1 / validity).
The samples where they part ways most (judge high, elements zero) are listed as examples.

``ids`` restricts the samples (quick runs); ``runs`` the (model, strategy) pairs.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, Field
from sysmo.contracts.artifact import Artifact, Language
from sysmo.log import get_logger

log = get_logger(__name__)


class SamplePoint(BaseModel):
    model: str
    strategy: str
    id: int
    judge_f1: float
    element_f1: float
    valid: bool


class JudgeAgreement(BaseModel):
    n_samples: int
    n_runs: int
    spearman_element_f1: float | None = None
    spearman_validity: float | None = None
    kendall_runs_element_f1: float | None = None
    kendall_runs_validity: float | None = None
    n_valid: int = 0  # predictions OpenSysML accepts (only these have an element tree to compare)
    spearman_element_f1_valid: float | None = None  # over the valid predictions only
    judge_mean_valid: float | None = None  # mean judge F1 of the predictions OpenSysML accepts ...
    judge_mean_invalid: float | None = None  # ... and of those it rejects
    examples: list[str] = Field(default_factory=list)  # "model/strategy sysmbench/id: judge F1 0.80, elements 0.00"


def _sysml(text: str) -> Artifact:
    return Artifact(language=Language.SYSML, files={"model.sysml": text if text.strip() else " "})


def _run_points(folder: Path, refs: dict[int, str], model: str, strategy: str,
                ids: frozenset[int] | None) -> tuple[list[SamplePoint], list[str]]:
    """The points of one judged run, and the samples left out because OpenSysML gave no verdict (timeout)."""
    from sysmo.evals.cascades.sysml import _tree
    from sysmo.evals.metrics import elements, sysmeval
    from sysmo.reproduce.sysmbench import samples
    from sysmo.contracts.check import Outcome

    out, undecided = [], []
    for sample in samples(folder, model, strategy):
        if (ids is not None and sample.id not in ids) or sample.sysm_eval_p_response is None:
            continue
        precision = sysmeval.parse_score(sample.sysm_eval_r_response or "")  # the authors' swap, corrected
        recall = sysmeval.parse_score(sample.sysm_eval_p_response or "")
        judge = sysmeval.f1(precision.value if precision else None, recall.value if recall else None) or 0.0
        ref_tree, cand_tree = _tree(_sysml(refs[sample.id]), reference=True), _tree(_sysml(sample.prediction))
        if any(t.check is not None and t.check.outcome not in (Outcome.OK, Outcome.FAILED)
               for t in (ref_tree, cand_tree)):  # a timeout says nothing about the model: not a point
            undecided.append(f"{model}/{strategy} sysmbench/{sample.id}")
            continue
        element_f1 = elements.compare(ref_tree, cand_tree).f1 if ref_tree.complete else 0.0
        out.append(SamplePoint(model=model, strategy=strategy, id=sample.id, judge_f1=judge,
                               element_f1=element_f1, valid=bool(cand_tree.check and cand_tree.check.ok)))
    log.info("judge_agreement.run", model=model, strategy=strategy, points=len(out), undecided=len(undecided))
    return out, undecided


def _run_points_job(args: tuple) -> tuple[list[SamplePoint], list[str]]:
    return _run_points(*args)


def points(data_dir: Path | str | None = None, *, runs: list[tuple[str, str]] | None = None,
           ids: frozenset[int] | None = None, workers: int = 2,
           undecided: list[str] | None = None) -> list[SamplePoint]:
    """Every judged sample's point, run by run on up to ``workers`` processes (each with its own OpenSysML
    kernel); samples OpenSysML gave no verdict on (a timeout) are left out and appended to ``undecided``."""
    from sysmo.reproduce.sysmbench import published_dir, references, summary

    folder = published_dir(data_dir)
    refs = references(data_dir)
    judged = runs or [(r.model, r.strategy) for r in summary(folder) if r.sysm_eval_p_avg is not None]
    jobs = [(folder, refs, model, strategy, ids) for model, strategy in judged]
    if workers <= 1 or len(jobs) < 2:
        results = [_run_points_job(job) for job in jobs]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(_run_points_job, jobs))
    out = []
    for found, left_out in results:
        out.extend(found)
        if undecided is not None:
            undecided.extend(left_out)
    return out


def agreement(pts: list[SamplePoint]) -> JudgeAgreement:
    from scipy.stats import kendalltau, spearmanr

    def rho(a: list[float], b: list[float]) -> float | None:
        value = spearmanr(a, b).statistic if len(set(a)) > 1 and len(set(b)) > 1 else None
        return None if value is None or math.isnan(value) else float(value)

    judge = [p.judge_f1 for p in pts]
    result = JudgeAgreement(n_samples=len(pts), n_runs=len({(p.model, p.strategy) for p in pts}),
                            spearman_element_f1=rho(judge, [p.element_f1 for p in pts]),
                            spearman_validity=rho(judge, [float(p.valid) for p in pts]))
    valid = [p for p in pts if p.valid]
    invalid = [p for p in pts if not p.valid]
    result.n_valid = len(valid)
    result.spearman_element_f1_valid = rho([p.judge_f1 for p in valid], [p.element_f1 for p in valid])
    result.judge_mean_valid = sum(p.judge_f1 for p in valid) / len(valid) if valid else None
    result.judge_mean_invalid = sum(p.judge_f1 for p in invalid) / len(invalid) if invalid else None
    by_run: dict[tuple[str, str], list[SamplePoint]] = {}
    for p in pts:
        by_run.setdefault((p.model, p.strategy), []).append(p)
    if len(by_run) > 2:
        means = {k: [sum(getattr(p, f) for p in v) / len(v) for f in ("judge_f1", "element_f1", "valid")]
                 for k, v in by_run.items()}
        cols = list(zip(*means.values(), strict=True))
        result.kendall_runs_element_f1 = float(kendalltau(cols[0], cols[1]).statistic)
        result.kendall_runs_validity = float(kendalltau(cols[0], cols[2]).statistic)
    apart = sorted(pts, key=lambda p: p.element_f1 - p.judge_f1)[:5]
    result.examples = [f"{p.model}/{p.strategy} sysmbench/{p.id}: judge F1 {p.judge_f1:.2f}, element F1 "
                       f"{p.element_f1:.2f}, {'valid' if p.valid else 'invalid'}" for p in apart]
    return result
