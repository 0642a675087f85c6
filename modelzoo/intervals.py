"""How sure a test-set figure is: a 95 % interval for each metric a model or ensemble is scored with.

- A share of the set's examples (accuracy, exact match): the Wilson score interval from the count and the set's
  size (the interval the dashboard and the simulation report use: `rounds.statistics.wilson`).
- Anything else (F1 — a mean of per-example scores for QA, a macro average for classification): a percentile
  bootstrap over the examples (`RESAMPLES` resamples, a fixed seed, so the same predictions give the same interval).
  A metric that is the mean of its per-example values is resampled as such (fast); any other is recomputed by
  the task kind on each resample (`BOOTSTRAP_EVALUATIONS` of them).

Stored with the metrics, under "intervals" ({metric: [low, high]}), by `rounds.evaluation` for every model and
ensemble it scores and by `modelzoo.opponent` for a language model opponent's held-out figure; the leaderboard
shows them beside each figure (a figure stored before intervals were has one computed from its value and size
when it is a share, and none otherwise). No Django: pure functions of the predictions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

SHARES = ("accuracy", "exact_match")  # metrics that are a share of the set's examples
RESAMPLES = 1000
BOOTSTRAP_EVALUATIONS = 200
SEED = 0


Z95 = 1.959964


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of `successes` out of `n`."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def share_interval(value: float, n: int) -> list[float]:
    """The Wilson 95 % interval of a share `value` of `n` examples."""
    low, high = wilson(round(value * n), n)
    return [round(low, 4), round(high, 4)]


def intervals(kind: Any, config: Any, targets: Sequence[Any], predictions: Sequence[dict[str, Any]],
              metrics: dict[str, Any]) -> dict[str, list[float]]:
    """{metric: [low, high]} for every numeric metric of `metrics` (the kind's evaluation of these predictions)."""
    n = len(targets)
    out: dict[str, list[float]] = {}
    if n == 0:
        return out
    per_item: list[dict[str, float]] | None = None
    for name, value in metrics.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if name in SHARES:
            out[name] = share_interval(float(value), n)
            continue
        if per_item is None:
            per_item = [kind.evaluate(config, [t], [p]) for t, p in zip(targets, predictions, strict=True)]
        out[name] = _bootstrap(kind, config, targets, predictions, per_item, name, float(value))
    return out


def _bootstrap(kind, config, targets, predictions, per_item, name: str, value: float) -> list[float]:
    rng = np.random.default_rng(SEED)
    values = np.array([float(row.get(name, 0.0)) for row in per_item])
    n = len(values)
    if abs(values.mean() - value) < 1e-6:  # a mean of per-example scores: resample the scores
        means = values[rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=1)
    else:  # e.g. macro-F1: the kind recomputes it on each resample
        means = []
        for _ in range(BOOTSTRAP_EVALUATIONS):
            idx = rng.integers(0, n, size=n)
            means.append(kind.evaluate(config, [targets[i] for i in idx], [predictions[i] for i in idx])[name])
        means = np.array(means)
    return [round(float(np.percentile(means, 2.5)), 4), round(float(np.percentile(means, 97.5)), 4)]


def with_intervals(kind, config, targets, predictions, metrics: dict[str, Any]) -> dict[str, Any]:
    """The metrics with their intervals (see the module docstring)."""
    return {**metrics, "intervals": intervals(kind, config, targets, predictions, metrics)}


def interval_of(metrics: dict[str, Any], name: str, size: int | None) -> list[float] | None:
    """The stored interval of `name`, or for a share stored before intervals were, its Wilson interval."""
    stored = (metrics.get("intervals") or {}).get(name)
    if stored:
        return list(stored)
    value = metrics.get(name)
    if name in SHARES and isinstance(value, int | float) and size:
        return share_interval(float(value), size)
    return None
