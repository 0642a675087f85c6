"""The arms comparison's statistics (rounds.arm_stats) against values computed by hand."""

from __future__ import annotations

import math

import pytest

from rounds import arm_stats


def hypergeometric_two_sided(a: int, b: int, c: int, d: int) -> float:
    """Fisher's exact two-sided p of [[a, b], [c, d]]: the tables with the same margins no likelier than this one."""
    row1, col1, n = a + b, a + c, a + b + c + d

    def prob(x: int) -> float:
        return math.comb(col1, x) * math.comb(n - col1, row1 - x) / math.comb(n, row1)

    seen = prob(a)
    return sum(prob(x) for x in range(max(0, row1 + col1 - n), min(row1, col1) + 1) if prob(x) <= seen * (1 + 1e-7))


def test_wilson_interval_of_a_share():
    s = arm_stats.share(3, 10)
    assert (s.value, s.low, s.high) == (0.3, pytest.approx(0.1078, abs=1e-4), pytest.approx(0.6032, abs=1e-4))
    assert arm_stats.share(0, 0).value is None


def test_fisher_exact_on_a_fixed_table():
    test = arm_stats.compare_shares("mer", [(3, 10), (8, 10)])
    assert test.test == arm_stats.FISHER
    assert test.p_value == pytest.approx(hypergeometric_two_sided(3, 7, 8, 2), rel=1e-9)
    assert test.p_value == pytest.approx(0.0698, abs=1e-4)
    assert test.statistic == pytest.approx(3 * 2 / (7 * 8), abs=1e-4)  # the sample odds ratio


def test_chi_square_for_three_arms():
    # expected 5 / 5 in every row: chi2 = 4 · 16 / 5 = 12.8 with 2 degrees of freedom, p = exp(-12.8 / 2)
    test = arm_stats.compare_shares("mer", [(1, 10), (5, 10), (9, 10)])
    assert test.test == arm_stats.CHI_SQUARE
    assert test.statistic == pytest.approx(12.8)
    assert test.p_value == pytest.approx(math.exp(-6.4), rel=1e-6)


def test_mann_whitney_and_kruskal():
    separated = arm_stats.compare_times("time", [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]])
    assert separated.test == arm_stats.MANN_WHITNEY
    assert separated.p_value == pytest.approx(2 / math.comb(10, 5))  # exact: the two most extreme orderings
    three = arm_stats.compare_times("time", [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15]])
    assert three.test == arm_stats.KRUSKAL
    # H = 12 / (n (n + 1)) Σ R_i² / n_i − 3 (n + 1) with rank sums 15, 40, 65 (n = 15)
    h = 12 / (15 * 16) * (15 ** 2 + 40 ** 2 + 65 ** 2) / 5 - 3 * 16
    assert three.statistic == pytest.approx(h, abs=1e-4)


def test_too_few_examples_give_no_number():
    for test in (arm_stats.compare_shares("mer", [(1, 4), (3, 10)]), arm_stats.compare_times("time", [[1] * 4, [2] * 9]),
                 arm_stats.compare_shares("mer", [(3, 10)])):
        assert test.p_value is None and test.reason == arm_stats.TOO_FEW


def test_one_outcome_only_is_no_difference():
    test = arm_stats.compare_shares("rejection_rate", [(0, 6), (0, 9), (0, 5)])
    assert test.p_value == 1.0 and test.reason == arm_stats.NO_VARIATION
    assert arm_stats.compare_times("time", [[2] * 5, [2] * 6]).p_value == 1.0


def test_holm_step_down():
    assert arm_stats.holm([0.01, 0.04, None, 0.03]) == [0.03, 0.06, None, 0.06]
    assert arm_stats.holm([0.5, 0.9]) == [1.0, 1.0]
    tests = [arm_stats.Test("a", "t", 2, p_value=0.02), arm_stats.Test("b", "t", 2, reason=arm_stats.TOO_FEW)]
    arm_stats.adjust(tests)
    assert [t.p_holm for t in tests] == [0.02, None]  # a family of one


def test_times_median_mean_and_bootstrap_interval():
    t = arm_stats.times([1000, 2000, 3000, 4000, 10000])
    assert (t.n, t.median, t.mean) == (5, 3.0, 4.0)
    assert t.low <= t.median <= t.high and t.low >= 1.0 and t.high <= 10.0
    assert arm_stats.times([1000, 2000, 3000, 4000, 10000]) == t  # seeded: the same interval every time
    assert arm_stats.times([]).median is None
