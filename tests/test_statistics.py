"""pass@k, best-of-n, bootstrap CI and paired tests against hand-computed values."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sysmo.evals.statistics import best_of_n, bootstrap_ci, pass_at_k, pass_at_ks


def test_pass_at_k_hand_computed():
    assert pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 5, 1) == 1.0
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)  # 1 - C(3,1)/C(5,1) = 1 - 3/5
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9)  # 1 - C(3,3)/C(5,3) = 1 - 1/10
    assert pass_at_k(5, 1, 5) == 1.0
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - math.comb(7, 2) / math.comb(10, 2))
    assert pass_at_ks([(5, 1), (5, 0), (5, 5)], ks=[1])[1] == pytest.approx((0.2 + 0 + 1) / 3)
    assert pass_at_ks([(5, 1), (3, 3)], ks=[1, 5]) == {1: pytest.approx(0.6)}  # k beyond a task's n: left out
    with pytest.raises(ValueError):
        pass_at_k(5, 6, 1)


@given(n=st.integers(1, 30), data=st.data())
def test_pass_at_k_is_monotone_in_k(n, data):
    c = data.draw(st.integers(0, n))
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:]))


def test_best_of_n_averages_each_tasks_best_sample():
    best = best_of_n([[0.5, None, 0.9], [0.2, float("nan")], [None]])
    assert best.mean == pytest.approx((0.9 + 0.2) / 2) and (best.tasks, best.of) == (2, 3)
    assert best.denominator == "2 of 3 tasks"  # the task with no scored sample is counted apart
    assert best_of_n([[None], []]).mean is None


def test_best_of_n_counts_a_task_whose_samples_are_all_invalid_as_0():
    """Negative control: invalid samples come as 0, so a task none of whose samples is valid pulls the mean down."""
    assert best_of_n([[0.8, 0.6], [0.0, 0.0, 0.0, 0.0, 0.0]]).mean == pytest.approx(0.4)


def test_bootstrap_ci_brackets_the_mean_and_is_deterministic():
    values = [0.0, 1.0] * 50
    ci = bootstrap_ci(values, seed=1)
    assert ci.mean == 0.5 and ci.low < 0.5 < ci.high
    assert 0.38 < ci.low and ci.high < 0.62  # ~ mean +- 1.96 * 0.05
    assert bootstrap_ci(values, seed=1) == ci
    assert bootstrap_ci([0.7]).low == 0.7


def test_pass_at_ks_averages_tasks_and_drops_a_k_some_task_has_too_few_samples_for():
    from sysmo.evals.statistics import pass_at_ks

    counts = [(4, 1), (3, 3)]
    assert pass_at_ks(counts, (1, 3, 4)) == {1: pytest.approx((0.25 + 1.0) / 2), 3: pytest.approx((0.75 + 1.0) / 2)}
    assert pass_at_ks([], (1,)) == {}
