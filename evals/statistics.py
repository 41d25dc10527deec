"""Statistics shared by the scorer and the runner: unbiased pass@k, best-of-n, bootstrap CIs, paired tests.

pass@k is always 1 - C(n-c, k) / C(n, k) (Chen et al. 2021), averaged over tasks; what counts as one of the c
correct samples is the caller's: ``sysmo.evals.tables`` reports it twice, "pass@k" (the final artifact passed
the tool check, repair rounds included) and "single-shot pass@k" (OODEval's: the first answer parses).

>>> pass_at_k(n=5, c=1, k=1)
0.2
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

import numpy as np
from pydantic import BaseModel


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al. 2021) for n samples of which c passed."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_at_ks(counts: Sequence[tuple[int, int]], ks: Sequence[int]) -> dict[int, float]:
    """Mean pass@k over tasks for each k every task has samples for (k <= the smallest n), from (n, c) per task.

    One estimator for every notion of "passed": the caller decides what a passing sample is (after repair,
    or single-shot as OODEval counts it) and hands the counts here.
    """
    if not counts:
        return {}
    n_min = min(n for n, _ in counts)
    return {k: float(np.mean([pass_at_k(n, c, k) for n, c in counts])) for k in ks if 1 <= k <= n_min}


def best_of_n(values_per_task: Sequence[Sequence[float | None]]) -> float | None:
    """Best-of-n: each task's best sample by the declared metric, averaged over the tasks that have a value
    (None / NaN values lose; None when no task has one)."""
    best = [max(v) for v in ([x for x in values if x is not None and not np.isnan(x)] for values in values_per_task)
            if v]
    return float(np.mean(best)) if best else None


class ConfidenceInterval(BaseModel):
    mean: float
    low: float
    high: float
    n: int
    level: float = 0.95

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"


def bootstrap_ci(values: Sequence[float], level: float = 0.95, resamples: int = 10_000, seed: int = 0) -> ConfidenceInterval:
    """Percentile bootstrap CI of the mean (deterministic for a seed)."""
    data = np.asarray([v for v in values if v is not None and not np.isnan(v)], dtype=float)
    if data.size == 0:
        return ConfidenceInterval(mean=float("nan"), low=float("nan"), high=float("nan"), n=0, level=level)
    if data.size == 1 or np.all(data == data[0]):
        m = float(data.mean())
        return ConfidenceInterval(mean=m, low=m, high=m, n=int(data.size), level=level)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(resamples, data.size))
    means = data[idx].mean(axis=1)
    alpha = (1 - level) / 2
    return ConfidenceInterval(mean=float(data.mean()), low=float(np.quantile(means, alpha)),
                              high=float(np.quantile(means, 1 - alpha)), n=int(data.size), level=level)


class PairedComparison(BaseModel):
    """A vs B on the same tasks: mean difference (A - B), its CI, and a significance test."""

    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    ci_low: float
    ci_high: float
    test: str
    statistic: float | None
    p_value: float | None

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < 0.05


def paired_comparison(a: Sequence[float], b: Sequence[float], seed: int = 0) -> PairedComparison:
    """Compare paired per-task scores: Wilcoxon signed-rank (exact McNemar when all scores are 0/1)."""
    from scipy import stats

    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.shape != xb.shape:
        raise ValueError("paired comparison needs the same tasks on both sides")
    diff = xa - xb
    ci = bootstrap_ci(list(diff), seed=seed)
    binary = set(np.unique(np.concatenate([xa, xb]))) <= {0.0, 1.0}
    statistic: float | None = None
    p_value: float | None = None
    if binary:
        only_a = int(np.sum((xa == 1) & (xb == 0)))
        only_b = int(np.sum((xa == 0) & (xb == 1)))
        test = "mcnemar-exact"
        if only_a + only_b:
            result = stats.binomtest(only_a, only_a + only_b, 0.5)
            statistic, p_value = float(only_a), float(result.pvalue)
        else:
            p_value = 1.0
    else:
        test = "wilcoxon"
        if np.any(diff != 0):
            result = stats.wilcoxon(xa, xb, zero_method="wilcox")
            statistic, p_value = float(result.statistic), float(result.pvalue)
        else:
            p_value = 1.0
    return PairedComparison(n=int(xa.size), mean_a=float(xa.mean()) if xa.size else float("nan"),
                            mean_b=float(xb.mean()) if xb.size else float("nan"), mean_diff=ci.mean,
                            ci_low=ci.low, ci_high=ci.high, test=test, statistic=statistic, p_value=p_value)
