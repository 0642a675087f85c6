"""Figures that come with every selection, so a 'hard' set can be told apart from a broken one."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.stats import spearmanr


def share_misclassified(selected: np.ndarray, probs: np.ndarray, labels: np.ndarray) -> float:
    """Share of the selected examples whose scorer prediction is not the gold label."""
    if len(selected) == 0:
        return float("nan")
    return float((probs[selected].argmax(1) != labels[selected]).mean())


def spearman_matrix(scores: dict[str, np.ndarray]) -> dict[tuple[str, str], float]:
    return {(a, b): float(spearmanr(scores[a], scores[b]).statistic) for a, b in combinations(scores, 2)}


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """|A ∩ B| / |A| for two selections of the same size."""
    return len(np.intersect1d(a, b)) / max(len(a), 1)


def overlap_matrix(selections: dict[str, np.ndarray]) -> dict[tuple[str, str], float]:
    return {(a, b): overlap(selections[a], selections[b]) for a, b in combinations(selections, 2)}
