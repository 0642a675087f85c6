from __future__ import annotations

import numpy as np
import pytest

from hardness.selection import easiest_k, hardest_k, random_k, select


def test_hardest_k_takes_the_top_scores_within_each_label(sst2_slice):
    labels = sst2_slice.labels
    scores = np.random.default_rng(0).random(len(labels))
    chosen = hardest_k(scores, labels, 5)
    for label in (0, 1):
        mine = chosen[labels[chosen] == label]
        assert len(mine) == 5
        others = np.setdiff1d(np.flatnonzero(labels == label), mine)
        assert scores[mine].min() >= scores[others].max()


def test_easiest_k_takes_the_lowest_scores_within_each_label(sst2_slice):
    labels = sst2_slice.labels
    scores = np.random.default_rng(1).random(len(labels))
    chosen = easiest_k(scores, labels, 4)
    for label in (0, 1):
        mine = chosen[labels[chosen] == label]
        others = np.setdiff1d(np.flatnonzero(labels == label), mine)
        assert len(mine) == 4 and scores[mine].max() <= scores[others].min()


def test_ties_are_broken_by_position_so_selection_is_stable(sst2_slice):
    labels = sst2_slice.labels
    flat = np.ones(len(labels))
    chosen = hardest_k(flat, labels, 3)
    expected = np.sort(np.concatenate([np.flatnonzero(labels == c)[:3] for c in (0, 1)]))
    np.testing.assert_array_equal(chosen, expected)
    np.testing.assert_array_equal(easiest_k(flat, labels, 3), expected)


def test_random_selection_is_class_balanced_and_seeded(sst2_slice):
    labels = sst2_slice.labels
    a, b, c = random_k(None, labels, 6, seed=7), random_k(None, labels, 6, seed=7), random_k(None, labels, 6, seed=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.bincount(labels[a]).tolist() == [6, 6]


def test_a_label_with_fewer_than_k_examples_gives_all_it_has():
    labels = np.array([0, 0, 0, 1, 1])
    chosen = hardest_k(np.arange(5, dtype=float), labels, 3)
    np.testing.assert_array_equal(chosen, [0, 1, 2, 3, 4])


def test_unknown_selection_strategy_is_refused():
    with pytest.raises(KeyError, match="unknown selection"):
        select("median", None, np.array([0, 1]), 1)
