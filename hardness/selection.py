"""Selecting k examples per label, as strategies behind a registry.

Every strategy is stable: ties in score are broken by position (lower index first), so the same scores give
the same selection on every machine; the random strategy is seeded.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from zoo.registry import Registry

Selector = Callable[[np.ndarray | None, np.ndarray, int, int], np.ndarray]
SELECTIONS: Registry[Selector] = Registry("selection")


def _per_label(labels: np.ndarray, pick: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Apply `pick` to the positions of each label (ascending) and return all picks, sorted."""
    chosen = [pick(np.flatnonzero(labels == label)) for label in np.unique(labels)]
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)


@SELECTIONS.register("hardest")
def hardest_k(scores: np.ndarray | None, labels: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """The k highest-scoring positions per label (fewer when a label has fewer than k)."""
    assert scores is not None
    # lexsort sorts by the last key first: descending score, then ascending position
    return _per_label(labels, lambda pos: pos[np.lexsort((pos, -scores[pos]))][:k])


@SELECTIONS.register("easiest")
def easiest_k(scores: np.ndarray | None, labels: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """The k lowest-scoring positions per label (the control)."""
    assert scores is not None
    return _per_label(labels, lambda pos: pos[np.lexsort((pos, scores[pos]))][:k])


@SELECTIONS.register("random")
def random_k(scores: np.ndarray | None, labels: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """k positions per label drawn without replacement; the same seed gives the same sample."""
    rng = np.random.default_rng(seed)
    return _per_label(labels, lambda pos: rng.permutation(pos)[:k])


def select(strategy: str, scores: np.ndarray | None, labels: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    return SELECTIONS.lookup(strategy)(scores, np.asarray(labels), k, seed)
