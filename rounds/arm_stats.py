"""The statistics of an arms comparison (rounds.arms), with no Django: intervals per arm and tests between arms.

- A share (MER, vMER, the validators' rejection rate): the value with its 95 % Wilson score interval
  (`rounds.statistics.wilson`, the interval the dashboard and the simulation reports use).
- Time per example: the median and the mean, and a 95 % percentile bootstrap interval of the median
  (`RESAMPLES` resamples, a fixed seed: the same rows give the same interval).
- Between arms, two-sided:
  - a share: Fisher's exact test for two arms (a 2 × 2 table), Pearson's chi-square test of independence
    (k × 2, no continuity correction) for more;
  - time per example: the Mann–Whitney U test for two arms, the Kruskal–Wallis H test for more.
  A test needs at least `MIN_PER_ARM` rows in every compared arm (the denominator: collected, decided or timed
  examples); with fewer it says "too few examples to compare" and gives no number.
- Holm's step-down correction across the metrics compared (the family: MER, vMER, rejection rate, time),
  so that "any metric differs" is read at 5 % overall.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from rounds.statistics import wilson

MIN_PER_ARM = 5
RESAMPLES = 2000
SEED = 0
TOO_FEW = "too few examples to compare"
NO_VARIATION = "every example has the same outcome"

FISHER = "Fisher's exact test"
CHI_SQUARE = "Pearson's chi-square test"
MANN_WHITNEY = "Mann–Whitney U test"
KRUSKAL = "Kruskal–Wallis H test"


@dataclass(frozen=True)
class Share:
    """`successes` of `n`, with the 95 % Wilson interval (value None when n is 0)."""

    successes: int
    n: int
    value: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def share(successes: int, n: int) -> Share:
    if n <= 0:
        return Share(successes, 0, None, None, None)
    interval = wilson(successes, n)
    return Share(successes, n, round(interval.value, 4), round(interval.low, 4), round(interval.high, 4))


@dataclass(frozen=True)
class Times:
    """Time per example in seconds: how many were timed, the median with its bootstrap interval, and the mean."""

    n: int
    median: float | None
    low: float | None
    high: float | None
    mean: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def bootstrap_median(values: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """The 95 % percentile bootstrap interval of the median of `values` (at least one)."""
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    medians = np.median(data[rng.integers(0, len(data), size=(resamples, len(data)))], axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


def times(milliseconds: Sequence[int]) -> Times:
    if not milliseconds:
        return Times(0, None, None, None, None)
    seconds = np.asarray(milliseconds, dtype=float) / 1000
    low, high = bootstrap_median(seconds)
    return Times(len(seconds), round(float(np.median(seconds)), 2), round(low, 2), round(high, 2),
                 round(float(seconds.mean()), 2))


@dataclass
class Test:
    """A test between arms of one metric: its name, statistic and two-sided p-value, Holm's adjusted p-value
    across the metrics, or, without a number, why not (`reason`)."""

    metric: str
    test: str
    arms: int  # how many arms were compared
    statistic: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    reason: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def compare_shares(metric: str, counts: Sequence[tuple[int, int]]) -> Test:
    """Do the arms' shares (`(successes, n)` per arm) differ? Fisher's exact test for two arms, the chi-square
    test of independence for more."""
    name = FISHER if len(counts) == 2 else CHI_SQUARE
    if len(counts) < 2 or any(n < MIN_PER_ARM for _, n in counts):
        return Test(metric, name, len(counts), reason=TOO_FEW)
    table = np.array([[s, n - s] for s, n in counts], dtype=np.int64)
    if table[:, 0].sum() == 0 or table[:, 1].sum() == 0:  # one outcome only: nothing differs (p = 1)
        return Test(metric, name, len(counts), statistic=0.0, p_value=1.0, reason=NO_VARIATION)
    if len(counts) == 2:
        odds, p = stats.fisher_exact(table, alternative="two-sided")
        statistic = float(odds) if np.isfinite(odds) else None
    else:
        statistic, p, _, _ = stats.chi2_contingency(table, correction=False)
        statistic = float(statistic)
    return Test(metric, name, len(counts), statistic=_round(statistic), p_value=_p(p))


def compare_times(metric: str, groups: Sequence[Sequence[float]]) -> Test:
    """Do the arms' times per example differ? The Mann–Whitney U test for two arms, Kruskal–Wallis for more."""
    name = MANN_WHITNEY if len(groups) == 2 else KRUSKAL
    if len(groups) < 2 or any(len(g) < MIN_PER_ARM for g in groups):
        return Test(metric, name, len(groups), reason=TOO_FEW)
    if len({float(v) for g in groups for v in g}) == 1:
        return Test(metric, name, len(groups), statistic=0.0, p_value=1.0, reason=NO_VARIATION)
    if len(groups) == 2:
        result = stats.mannwhitneyu(groups[0], groups[1], alternative="two-sided")
    else:
        result = stats.kruskal(*groups)
    return Test(metric, name, len(groups), statistic=_round(float(result.statistic)), p_value=_p(result.pvalue))


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None stays None and does not count in the family)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = _p(running)
    return out


def adjust(tests: Sequence[Test]) -> None:
    """Fill each test's `p_holm` (Holm over the tests that have a p-value)."""
    for test, adjusted in zip(tests, holm([t.p_value for t in tests]), strict=True):
        test.p_holm = adjusted


def _p(value: float) -> float:
    return float(min(1.0, max(0.0, float(value))))


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)
