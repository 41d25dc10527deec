"""Paired analysis of what each level of a factor buys: every level against its factor's baseline, attempt by attempt.

An experiment's arms differ in factors: ``agent``, ``model``, ``feedback``, ``strategy``, ``temperature``,
``max_rounds`` (a factor whose column is absent, or that has one level, is not analysed). Two arms that differ
in exactly one factor are compared on the attempts they share: the unit of pairing is (task, sample index),
every other factor held fixed. For each pair of arms (baseline level, other level) this module computes

- an exact McNemar test on pass after repair (the status ``passed``), a two-sided binomial test on the
  discordant pairs (``scipy.stats.binomtest(level_only, level_only + baseline_only, 0.5)``);
- the same test on the first answer, before any feedback, under both of the report's definitions (names from
  ``sysmo.evals.glossary``): "first answer parses" (OODEval's single-shot: the language's parser accepted it,
  ``first_answer_parses``, the leaderboard's "pass@k first answer parses (OODEval)") and "first answer passes"
  (it passed every check of the tool check, ``passed_round == 0``);
- a Wilcoxon signed-rank test on the family's headline score (the kind's selection metric,
  ``tables.DEFAULT_SELECTION_METRIC`` or the experiment's ``selection_metric``), ``zero_method="wilcox"``
  (pairs with equal scores are dropped, as Wilcoxon's original test);
- effect sizes, level minus baseline: the difference in pass rate and the mean paired score difference, each
  with a 95% percentile bootstrap CI over the pairs (``statistics.bootstrap_ci``: numpy, 10,000 resamples,
  seed 0);
- p-values adjusted across every comparison of the analysis (one report, one ``sysmo compare``), each test
  separately: Holm's step-down method by default, Benjamini-Hochberg (``scipy.stats.false_discovery_control``)
  on request.

Baselines (``Pairing``): by default feedback ``none``, strategy ``default`` (sysmo's own prompt; else
``zero-shot``), the smallest temperature and max_rounds, the first agent and model the experiment lists; a
held-fixed setting without the baseline level compares with its first level. ``--baseline FACTOR=LEVEL`` chooses
a factor's baseline (a held-fixed setting without it is left out, never compared with another level), and
``--all-pairs`` compares every pair of levels of each factor without a chosen baseline; either way every row of
the analysis is adjusted together. docs/paired-analysis.md has the definitions and a worked example.

>>> holm([0.01, 0.04, 0.03])
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from sysmo.errors import AnalysisError
from sysmo.evals.statistics import bootstrap_ci

FACTORS: tuple[str, ...] = ("agent", "model", "feedback", "strategy", "temperature", "max_rounds")
# factors only ``sysmo compare`` varies: an experiment has one seed (its column, when compared, is the experiment's)
COMPARE_ONLY: tuple[str, ...] = ("seed",)
PAIR_KEY: tuple[str, ...] = ("task_id", "sample_index")
# declared level orders: the first level present is the factor's baseline
DECLARED_ORDER: dict[str, tuple[str, ...]] = {
    "feedback": ("none", "bare", "diagnostics", "full"),
    "strategy": ("default", "zero-shot", "few-shot", "cot", "grammar"),
}
NUMERIC = {"temperature", "max_rounds"}
# factors a level makes moot: feedback ``none`` is one shot, whatever max_rounds its arm records
MOOT: dict[tuple[str, str], tuple[str, ...]] = {("feedback", "none"): ("max_rounds",)}  # baseline: the smallest value
WILCOXON_ZERO_METHOD = "wilcox"
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
Correction = Literal["holm", "bh"]
CORRECTION_NAMES: dict[str, str] = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
# the report's split of agents by level (tables.split_by_feedback): the factor columns carry the level already
_LEVEL_SUFFIX = re.compile(r" \[(?:" + "|".join(FACTORS) + r")=[^\]]*\]")


class Pairing(BaseModel):
    """Which levels are compared: each level against its factor's baseline, the default one (``level_order``) or
    one chosen per factor (``--baseline FACTOR=LEVEL``), or every pair of levels (``--all-pairs``: each factor
    without a chosen baseline)."""

    baselines: dict[str, str] = Field(default_factory=dict)  # factor -> its chosen baseline level
    all_pairs: bool = False

    @classmethod
    def of(cls, baselines: Sequence[str] = (), all_pairs: bool = False, factors: Sequence[str] = FACTORS) -> Pairing:
        """From the command line's ``--baseline FACTOR=LEVEL`` items (one baseline per factor; ``factors``: those
        the command analyses)."""
        chosen: dict[str, str] = {}
        for item in baselines:
            factor, sep, level = (part.strip() for part in item.partition("="))
            factor = factor.replace("-", "_")
            if not sep or not factor or not level:
                raise AnalysisError(f"--baseline {item!r}: write FACTOR=LEVEL, e.g. feedback=bare")
            if factor not in factors:
                raise AnalysisError(f"--baseline {item}: no factor {factor!r}; name one of {', '.join(factors)}")
            if chosen.get(factor, level) != level:
                raise AnalysisError(f"--baseline names two baselines of {factor} ({chosen[factor]}, {level}): "
                                    "give one per factor")
            chosen[factor] = level
        return cls(baselines=chosen, all_pairs=all_pairs)


class PairedRow(BaseModel):
    """One level against its factor's baseline in one family, the other factors held at ``held_fixed``."""

    family: str
    factor: str
    baseline: str
    level: str
    held_fixed: str  # "model=m1, feedback=none", or "" when no other factor varies
    n_pairs: int
    pass_baseline: float
    pass_level: float
    level_only: int  # discordant pairs: the level passed, the baseline did not
    baseline_only: int
    p_mcnemar: float
    delta_pass: float
    delta_pass_ci_low: float
    delta_pass_ci_high: float
    first_answer_parses_baseline: float | None  # None: the attempts carry no first_answer_parses column
    first_answer_parses_level: float | None
    first_answer_parses_level_only: int | None
    first_answer_parses_baseline_only: int | None
    p_mcnemar_first_answer_parses: float | None
    first_answer_passes_baseline: float
    first_answer_passes_level: float
    first_answer_passes_level_only: int
    first_answer_passes_baseline_only: int
    p_mcnemar_first_answer_passes: float
    score_metric: str | None
    n_score_pairs: int
    delta_score: float | None
    delta_score_ci_low: float | None
    delta_score_ci_high: float | None
    p_wilcoxon: float | None
    p_mcnemar_adjusted: float | None = None
    p_mcnemar_first_answer_parses_adjusted: float | None = None
    p_mcnemar_first_answer_passes_adjusted: float | None = None
    p_wilcoxon_adjusted: float | None = None
    method: str = ""


# ---------------------------------------------------------------------------------------------- p-value adjustment
def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment (family-wise error rate): the i-th smallest p times (m - i), made monotone."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return [float(v) for v in adjusted]


def adjust(pvalues: Sequence[float], correction: Correction) -> list[float]:
    """``pvalues`` adjusted for multiple comparisons: ``holm`` or ``bh`` (Benjamini-Hochberg, scipy's)."""
    if correction == "holm":
        return holm(pvalues)
    if correction == "bh":
        from scipy.stats import false_discovery_control

        return [float(v) for v in false_discovery_control(np.asarray(pvalues, dtype=float), method="bh")] \
            if len(pvalues) else []
    raise ValueError(f"unknown correction {correction!r}: use holm or bh")


# ---------------------------------------------------------------------------------------------- tests
def mcnemar_exact(level_only: int, baseline_only: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of the discordant pairs against 1/2 (1.0 when none)."""
    from scipy.stats import binomtest

    discordant = level_only + baseline_only
    return float(binomtest(level_only, discordant, 0.5).pvalue) if discordant else 1.0


def wilcoxon_signed_rank(differences: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired differences (``zero_method="wilcox"``: zero differences
    are dropped; 1.0 when every difference is zero): scipy's ``wilcoxon``, whose p-value for at most
    ``EXACT_SIGN_FLIPS_MAX_N`` differences with ties or zeros is computed here (``sign_flip_p``)."""
    from scipy.stats import wilcoxon

    diff = np.asarray(differences, dtype=float)
    if diff.size == 0 or not np.any(diff != 0):
        return 1.0
    nonzero = np.abs(diff[diff != 0])
    if diff.size <= EXACT_SIGN_FLIPS_MAX_N and (nonzero.size < diff.size or np.unique(nonzero).size < nonzero.size):
        return sign_flip_p(diff)
    return float(wilcoxon(diff, zero_method=WILCOXON_ZERO_METHOD).pvalue)


# scipy's wilcoxon (method "auto") answers differences with ties or zeros by a permutation test over all 2**n sign
# assignments up to this n (its 9,999 resamples cover them), recomputing the ranks of each: 0.2-0.4 s a comparison,
# seconds for a report's paired tables
EXACT_SIGN_FLIPS_MAX_N = 13


def sign_flip_p(differences: np.ndarray) -> float:
    """The two-sided p-value of scipy's exact permutation test of Wilcoxon's W+ (the rank sum of the positive
    differences, zeros dropped), the same number: every sign assignment keeps the absolute values, so their
    average ranks are computed once and each assignment's W+ is a sum of them; counted within scipy's relative
    tolerance (100 eps) of the observed W+, as ``scipy.stats.permutation_test`` counts."""
    from scipy.stats import rankdata

    n = differences.size
    ranks = np.zeros(n)
    nonzero = differences != 0
    ranks[nonzero] = rankdata(np.abs(differences[nonzero]))
    observed = float(ranks[differences > 0].sum())
    signs = (np.arange(2 ** n)[:, None] >> np.arange(n)) & 1  # every assignment: 1 = positive
    null = signs @ ranks
    gamma = abs(np.finfo(float).eps * 100 * observed)
    below = np.count_nonzero(null <= observed + gamma) / 2 ** n
    above = np.count_nonzero(null >= observed - gamma) / 2 ** n
    return float(min(1.0, 2 * min(below, above)))


def method_text(correction: Correction) -> str:
    return (f"McNemar exact (binomial test on discordant pairs); Wilcoxon signed-rank (zero_method="
            f"{WILCOXON_ZERO_METHOD}); 95% percentile bootstrap CI (numpy, {BOOTSTRAP_RESAMPLES} resamples, seed "
            f"{BOOTSTRAP_SEED}); {CORRECTION_NAMES[correction]} adjustment across the analysis' comparisons, "
            "per test")


# ---------------------------------------------------------------------------------------------- the attempts
def _level_text(value: object) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "default"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def factor_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The attempts with their factors as text columns (agents without the report's ``[feedback=...]`` label) and
    ``first_answer_passes`` (the first answer passed every check: ``passed_round == 0``)."""
    data = frame.copy()
    if "agent" in data.columns:
        data["agent"] = data["agent"].astype(str).str.replace(_LEVEL_SUFFIX, "", regex=True)
    for factor in (*FACTORS, *COMPARE_ONLY):
        if factor in data.columns:
            data[factor] = data[factor].map(_level_text)
    rounds = data["passed_round"] if "passed_round" in data.columns else pd.Series(np.nan, index=data.index)
    data["first_answer_passes"] = (pd.to_numeric(rounds, errors="coerce") == 0).astype(int)
    data["passed"] = data["passed"].astype(int)
    return data


def headline_values(frame: pd.DataFrame, metric: str | None) -> pd.Series:
    """Each attempt's headline score (``score.<metric>``); a sub-metric of a stage that scored 0 without metrics
    (gated by an earlier stage's failure) counts 0, a stage not applicable (no judge, unscored) is missing."""
    if metric is None or f"score.{metric}" not in frame.columns:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    values = pd.to_numeric(frame[f"score.{metric}"], errors="coerce")
    stage = metric.split(".", 1)[0]
    if "." in metric and f"score.{stage}" in frame.columns:
        stage_values = pd.to_numeric(frame[f"score.{stage}"], errors="coerce")
        values = values.where(values.notna() | (stage_values != 0), 0.0)
    return values


def level_order(factor: str, levels: Sequence[str], listed: Sequence[str] | None = None) -> list[str]:
    """The factor's levels, baseline first: declared order (feedback, strategy), the smallest number first
    (temperature, max_rounds), else the order the experiment lists them in (agents, models), else sorted."""
    present = list(dict.fromkeys(levels))
    if factor in DECLARED_ORDER:
        rank = {v: i for i, v in enumerate(DECLARED_ORDER[factor])}
        return sorted(present, key=lambda v: (rank.get(v, len(rank)), v))
    if factor in NUMERIC:
        def number(v: str) -> float:
            try:
                return float(v)
            except ValueError:
                return float("inf")
        return sorted(present, key=lambda v: (number(v), v))
    rank = {v: i for i, v in enumerate(listed or [])}
    return sorted(present, key=lambda v: (rank.get(v, len(rank)), v))


def matching_level(factor: str, wanted: str, levels: Sequence[str]) -> str | None:
    """The level of ``levels`` that ``wanted`` names (numbers by value: ``0.20`` is ``0.2``), or None."""
    if wanted in levels:
        return wanted
    if factor in NUMERIC | set(COMPARE_ONLY):
        try:
            number = float(wanted)
        except ValueError:
            return None
        return next((lv for lv in levels if _number(lv) == number), None)
    return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def resolve_pairing(data: pd.DataFrame, pairing: Pairing, factors: Sequence[str],
                    listed: Mapping[str, Sequence[str]] | None = None) -> Pairing:
    """``pairing`` with each chosen baseline written as the attempts write its level; refuses (one line naming the
    levels there are) a factor that is not analysed or a level no attempt ran."""
    resolved: dict[str, str] = {}
    for factor, wanted in pairing.baselines.items():
        if factor not in factors or factor not in data.columns:
            raise AnalysisError(f"--baseline {factor}={wanted}: {factor} is not a factor of this analysis "
                                f"(factors: {', '.join(f for f in factors if f in data.columns) or 'none'})")
        levels = level_order(factor, list(data[factor].unique()), (listed or {}).get(factor))
        found = matching_level(factor, wanted, levels)
        if found is None:
            raise AnalysisError(f"--baseline {factor}={wanted}: no attempt ran {factor} {wanted}; its levels here: "
                                f"{', '.join(levels)}")
        resolved[factor] = found
    return pairing.model_copy(update={"baselines": resolved})


def baseline_lines(frame: pd.DataFrame, pairing: Pairing | None = None, factors: Sequence[str] | None = None,
                   listed: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """What each varied factor's levels are compared with, one phrase per factor: ``feedback=none (default)``,
    ``feedback=bare (--baseline)``, ``feedback: every pair of levels (--all-pairs)``."""
    pairing = pairing or Pairing()
    if frame.empty:
        return []
    data = factor_frame(frame)
    names = [f for f in (factors or FACTORS) if f in data.columns]
    out = []
    for factor in names:
        levels = level_order(factor, list(data[factor].unique()), (listed or {}).get(factor))
        if len(levels) < 2:
            continue
        chosen = matching_level(factor, pairing.baselines[factor], levels) if factor in pairing.baselines else None
        if chosen is not None:
            out.append(f"{factor}={chosen} (--baseline)")
        elif pairing.all_pairs:
            out.append(f"{factor}: every pair of levels (--all-pairs)")
        else:
            out.append(f"{factor}={levels[0]} (default)")
    return out


def _rate(values: pd.Series) -> float:
    return float(values.mean()) if len(values) else float("nan")


def _discordant(baseline: np.ndarray, level: np.ndarray) -> tuple[int, int]:
    """(pairs only the level passed, pairs only the baseline passed)."""
    return int(np.sum((level == 1) & (baseline == 0))), int(np.sum((level == 0) & (baseline == 1)))


def _compare(family: str, factor: str, baseline: str, level: str, held: str, base: pd.DataFrame,
             other: pd.DataFrame, score_metric: str | None) -> PairedRow | None:
    key = list(PAIR_KEY)
    for side, rows in (("baseline", base), ("level", other)):
        repeated = rows[rows.duplicated(key, keep=False)]
        if not repeated.empty:
            first = repeated.iloc[0]
            raise AnalysisError(
                f"{family}: {factor}={baseline if side == 'baseline' else level} ({held or 'no other factor'}) has "
                f"{len(repeated)} attempts on a repeated (task, sample): e.g. {first['task_id']} sample "
                f"{first['sample_index']}; an arm was run twice (compare experiments that do not share an arm)")
    pairs = base.merge(other, on=key, suffixes=("_b", "_l"))
    if pairs.empty:
        return None
    passed_b, passed_l = pairs["passed_b"].to_numpy(), pairs["passed_l"].to_numpy()
    level_only, baseline_only = _discordant(passed_b, passed_l)
    passes_level_only, passes_base_only = _discordant(pairs["first_answer_passes_b"].to_numpy(),
                                                      pairs["first_answer_passes_l"].to_numpy())
    parses = "first_answer_parses_b" in pairs.columns
    parses_level_only, parses_base_only = (_discordant(pairs["first_answer_parses_b"].to_numpy(),
                                                       pairs["first_answer_parses_l"].to_numpy())
                                           if parses else (None, None))
    delta = bootstrap_ci(list((passed_l - passed_b).astype(float)), resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
    scored = pairs.dropna(subset=["headline_b", "headline_l"])
    score_diff = (scored["headline_l"] - scored["headline_b"]).to_numpy(dtype=float)
    score_ci = (bootstrap_ci(list(score_diff), resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
                if score_diff.size else None)
    return PairedRow(
        family=family, factor=factor, baseline=baseline, level=level, held_fixed=held, n_pairs=len(pairs),
        pass_baseline=_rate(pairs["passed_b"]), pass_level=_rate(pairs["passed_l"]), level_only=level_only,
        baseline_only=baseline_only, p_mcnemar=mcnemar_exact(level_only, baseline_only), delta_pass=delta.mean,
        delta_pass_ci_low=delta.low, delta_pass_ci_high=delta.high,
        first_answer_parses_baseline=_rate(pairs["first_answer_parses_b"]) if parses else None,
        first_answer_parses_level=_rate(pairs["first_answer_parses_l"]) if parses else None,
        first_answer_parses_level_only=parses_level_only, first_answer_parses_baseline_only=parses_base_only,
        p_mcnemar_first_answer_parses=(mcnemar_exact(parses_level_only, parses_base_only)
                                       if parses_level_only is not None and parses_base_only is not None else None),
        first_answer_passes_baseline=_rate(pairs["first_answer_passes_b"]),
        first_answer_passes_level=_rate(pairs["first_answer_passes_l"]),
        first_answer_passes_level_only=passes_level_only, first_answer_passes_baseline_only=passes_base_only,
        p_mcnemar_first_answer_passes=mcnemar_exact(passes_level_only, passes_base_only),
        score_metric=score_metric if score_ci is not None else None, n_score_pairs=int(score_diff.size),
        delta_score=score_ci.mean if score_ci else None, delta_score_ci_low=score_ci.low if score_ci else None,
        delta_score_ci_high=score_ci.high if score_ci else None,
        p_wilcoxon=wilcoxon_signed_rank(score_diff) if score_diff.size else None)


def row_of(frame: pd.DataFrame, factor: str, level: str) -> pd.DataFrame:
    return frame[frame[factor] == level]


def _attempts_of(group: pd.DataFrame, cell: pd.DataFrame, factor: str, level: str,
                 held: dict[str, str]) -> pd.DataFrame:
    """The attempts of ``level`` that stand for it in a held-fixed cell: the cell's own, or, for a level that does
    not use a held factor (one shot has no repair rounds), its attempts under the cell's other held factors."""
    base = row_of(cell, factor, level)
    moot = MOOT.get((factor, level), ())
    if base.empty and any(f in moot for f in held):
        base = row_of(group, factor, level)
        for f, v in held.items():
            if f not in moot:
                base = base[base[f] == v]
    return base


def _pairs(group: pd.DataFrame, cell: pd.DataFrame, factor: str, levels: list[str], held: dict[str, str],
           pairing: Pairing) -> list[tuple[str, pd.DataFrame, str]]:
    """(baseline level, its attempts, level) for each comparison of a held-fixed cell, as ``pairing`` asks."""
    present = [lv for lv in levels if not row_of(cell, factor, lv).empty]
    chosen = pairing.baselines.get(factor)
    if chosen is not None or not pairing.all_pairs:
        baseline = chosen if chosen is not None else levels[0]
        base = _attempts_of(group, cell, factor, baseline, held)
        if base.empty and chosen is None and present:  # the default baseline falls back to the cell's first level
            baseline = present[0]
            base = row_of(cell, factor, baseline)
        if base.empty:
            return []
        return [(baseline, base, lv) for lv in present if lv != baseline]
    out = []
    for i, baseline in enumerate(levels):
        base = _attempts_of(group, cell, factor, baseline, held)
        if not base.empty:
            out += [(baseline, base, lv) for lv in levels[i + 1:] if lv in present]
    return out


def paired_rows(frame: pd.DataFrame, *, headline: Mapping[str, str], factors: Sequence[str] | None = None,
                listed: Mapping[str, Sequence[str]] | None = None, correction: Correction = "holm",
                pairing: Pairing | None = None) -> list[PairedRow]:
    """Every level of every factor against its baseline (or every pair of levels: ``pairing``), per family (task
    kind) and held-fixed setting, with p-values adjusted across all the rows (each test on its own).

    ``frame``: one row per attempt (``tables.attempts_frame``; not-covered attempts left out). ``headline``:
    kind -> score metric for the Wilcoxon test. ``factors``: the factors to vary (default: every one with more
    than one level; ``seed`` only when named). ``listed``: the order an experiment lists agents and models in (the
    first is the default baseline). ``pairing``: chosen baselines, or every pair (default: each factor's default).
    """
    if frame.empty:
        return []
    data = factor_frame(frame)
    present = [f for f in (*FACTORS, *(f for f in COMPARE_ONLY if f in (factors or ()))) if f in data.columns]
    wanted = [f for f in (factors or present) if f in present]
    pairing = resolve_pairing(data, pairing or Pairing(), wanted, listed)
    rows: list[PairedRow] = []
    for family, group in data.groupby("kind", sort=True):
        family = str(family)
        group = group.assign(headline=headline_values(group, headline.get(family)))
        varying = [f for f in present if group[f].nunique() > 1]
        for factor in wanted:
            levels = level_order(factor, list(group[factor].unique()), (listed or {}).get(factor))
            if len(levels) < 2:
                continue
            held_by = [f for f in varying if f != factor]
            cells = group.groupby(held_by, sort=True) if held_by else [((), group)]
            for held_values, cell in cells:
                held_values = held_values if isinstance(held_values, tuple) else (held_values,)
                held = ", ".join(f"{f}={v}" for f, v in zip(held_by, held_values))
                for baseline, base, level in _pairs(group, cell, factor, levels, dict(zip(held_by, held_values)),
                                                    pairing):
                    row = _compare(family, factor, baseline, level, held, base, row_of(cell, factor, level),
                                   headline.get(family))
                    if row is not None:
                        rows.append(row)
    return adjusted(rows, correction)


def adjusted(rows: list[PairedRow], correction: Correction = "holm") -> list[PairedRow]:
    """``rows`` with their adjusted p-values (each test across every row that has it) and the method named."""
    out = [r.model_copy(update={"method": method_text(correction)}) for r in rows]
    for raw, target in (("p_mcnemar", "p_mcnemar_adjusted"),
                        ("p_mcnemar_first_answer_parses", "p_mcnemar_first_answer_parses_adjusted"),
                        ("p_mcnemar_first_answer_passes", "p_mcnemar_first_answer_passes_adjusted"),
                        ("p_wilcoxon", "p_wilcoxon_adjusted")):
        have = [i for i, r in enumerate(out) if getattr(r, raw) is not None]
        for i, value in zip(have, adjust([getattr(out[i], raw) for i in have], correction)):
            out[i] = out[i].model_copy(update={target: value})
    return out


# ---------------------------------------------------------------------------------------------- tables
def rows_frame(rows: Sequence[PairedRow]) -> pd.DataFrame:
    """Every field of every row (``paired.csv``)."""
    return pd.DataFrame([r.model_dump() for r in rows], columns=list(PairedRow.model_fields))


def _p(raw: float | None, adj: float | None) -> str:
    if raw is None:
        return ""
    return f"{raw:.3g} (adj {adj:.3g})" if adj is not None else f"{raw:.3g}"


def _signed(value: float | None, low: float | None, high: float | None) -> str:
    if value is None or np.isnan(value):
        return ""
    return f"{value:+.3f} [{low:+.3f}, {high:+.3f}]"


def _difference(baseline: float | None, level: float | None) -> str:
    return "" if baseline is None or level is None else f"{level - baseline:+.3f}"


def display_tables(rows: Sequence[PairedRow], correction: Correction = "holm") -> dict[str, pd.DataFrame]:
    """One table per family for people: level vs baseline, pairs, Δpass after repair, Δfirst answer parses, Δfirst
    answer passes and Δscore, raw and adjusted p (column names: ``sysmo.evals.glossary``)."""
    name = CORRECTION_NAMES[correction]
    tables: dict[str, list[dict[str, object]]] = {}
    for r in rows:
        tables.setdefault(r.family, []).append({
            "factor": r.factor, "level vs baseline": f"{r.level} vs {r.baseline}", "held fixed": r.held_fixed,
            "n pairs": r.n_pairs,
            "pass after repair (base → level)": f"{r.pass_baseline:.3f} → {r.pass_level:.3f}",
            "Δpass after repair [95% CI]": _signed(r.delta_pass, r.delta_pass_ci_low, r.delta_pass_ci_high),
            f"p McNemar pass after repair ({name})": _p(r.p_mcnemar, r.p_mcnemar_adjusted),
            "Δfirst answer parses": _difference(r.first_answer_parses_baseline, r.first_answer_parses_level),
            f"p McNemar first answer parses ({name})": _p(r.p_mcnemar_first_answer_parses,
                                                         r.p_mcnemar_first_answer_parses_adjusted),
            "Δfirst answer passes": _difference(r.first_answer_passes_baseline, r.first_answer_passes_level),
            f"p McNemar first answer passes ({name})": _p(r.p_mcnemar_first_answer_passes,
                                                         r.p_mcnemar_first_answer_passes_adjusted),
            "Δscore [95% CI]": (f"{r.score_metric}: " if r.score_metric else "")
            + _signed(r.delta_score, r.delta_score_ci_low, r.delta_score_ci_high),
            f"p Wilcoxon score ({name})": _p(r.p_wilcoxon, r.p_wilcoxon_adjusted)})
    return {family: pd.DataFrame(table) for family, table in tables.items()}
