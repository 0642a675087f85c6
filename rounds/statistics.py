"""Statistics the product shows and the research code reuses: an error rate with its Wilson interval, the paired
bootstrap of a difference of error rates, and the exact McNemar test on discordant pairs.

The round dashboard's round-over-round table (`rounds.dashboard`) and the simulations in `research/` use the same
functions, so a figure on a page and in a report are computed alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from modelzoo import intervals


@dataclass
class Interval:
    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"value": round(self.value, 4), "low": round(self.low, 4), "high": round(self.high, 4)}


def wilson(errors: int, n: int, z: float = intervals.Z95) -> Interval:
    """The error rate and its Wilson score interval (`modelzoo.intervals.wilson`)."""
    if n == 0:
        return Interval(0.0, 0.0, 1.0)
    low, high = intervals.wilson(errors, n, z)
    return Interval(errors / n, low, high)


def paired_bootstrap(before: Sequence[int], after: Sequence[int], resamples: int = 2000, seed: int = 0) -> Interval:
    """The difference of error rates (after − before) on the same examples, with a percentile interval from
    resampling the examples (pairs kept together)."""
    b, a = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if len(b) == 0:
        return Interval(0.0, 0.0, 0.0)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(b), size=(resamples, len(b)))
    diffs = (a[idx] - b[idx]).mean(axis=1)
    return Interval(float(a.mean() - b.mean()), float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5)))


def discordant(before: Sequence[int], after: Sequence[int]) -> tuple[int, int]:
    """(wrong before and right after, right before and wrong after) over paired 0/1 errors."""
    fixed = sum(1 for b, a in zip(before, after, strict=True) if b and not a)
    broken = sum(1 for b, a in zip(before, after, strict=True) if a and not b)
    return fixed, broken


def mcnemar(fixed: int, broken: int) -> float:
    """The exact McNemar test's two-sided p-value: under "both ensembles err alike", each of the n discordant
    pairs goes either way with probability ½, so p = min(1, 2 · P(Binomial(n, ½) ≤ min(b, c))). scipy's
    `binomtest` when scipy is installed, else the same sum with math.comb."""
    n, k = fixed + broken, min(fixed, broken)
    if n == 0:
        return 1.0
    try:
        from scipy.stats import binomtest
    except ImportError:  # pragma: no cover - scipy is in requirements.txt; the sum is the same test
        return mcnemar_exact(fixed, broken)
    return float(min(1.0, binomtest(k, n, 0.5, alternative="two-sided").pvalue))


def mcnemar_exact(fixed: int, broken: int) -> float:
    """The exact McNemar p-value without scipy: 2 · Σ_{i ≤ min(b, c)} C(n, i) / 2ⁿ, at most 1."""
    n, k = fixed + broken, min(fixed, broken)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)
