"""Statistics shared by the scorer and the runner: unbiased pass@k, best-of-n, bootstrap CIs (the paired tests
are ``sysmo.evals.paired``).

pass@k is always 1 - C(n-c, k) / C(n, k) (Chen et al. 2021), averaged over tasks; what counts as one of the c
correct samples is the caller's: ``sysmo.evals.tables`` reports it twice, "pass@k" (the final artifact passed
the tool check, repair rounds included), "first answer parses pass@k" (OODEval's single-shot pass@k) and "first
answer passes pass@k" (the first answer passed every check).

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
    the first answer parsing, as OODEval counts it, or passing every check) and hands the counts here. Every task
    is in the mean: a task with no passing sample counts 0.
    """
    if not counts:
        return {}
    n_min = min(n for n, _ in counts)
    return {k: float(np.mean([pass_at_k(n, c, k) for n, c in counts])) for k in ks if 1 <= k <= n_min}


class BestOfN(BaseModel):
    """Best-of-n over a group's tasks: ``mean`` of each task's best sample over the ``tasks`` tasks that have a
    value, out of ``of`` tasks in all (``tasks < of`` only when some task has no sample with a value)."""

    mean: float | None
    tasks: int
    of: int

    @property
    def denominator(self) -> str:
        return f"{self.tasks} of {self.of} tasks"


def best_of_n(values_per_task: Sequence[Sequence[float | None]]) -> BestOfN:
    """Best-of-n: each task's best sample by the declared metric, averaged over the tasks that have a value.

    A value the caller gives as None / NaN is "not scored" and loses to any number; an invalid sample must come
    as 0 (``tables.metric_values`` does that), so a task whose samples are all invalid counts 0, never drops out.
    A task with no value at all is left out and counted apart (``tasks`` of ``of``); ``mean`` is None when no
    task has one.

    >>> best_of_n([[0.0, 0.0], [0.5, 1.0]]).mean
    0.5
    """
    best = [max(v) for v in ([x for x in values if x is not None and not np.isnan(x)] for values in values_per_task)
            if v]
    return BestOfN(mean=float(np.mean(best)) if best else None, tasks=len(best), of=len(values_per_task))


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
