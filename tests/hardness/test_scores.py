from __future__ import annotations

import numpy as np
import pytest

from hardness.heads import train_linear_head
from hardness.sanity import overlap, share_misclassified, spearman_matrix
from hardness.scores import ScoringContext, compute, data_map, label_free_scores


def test_data_map_statistics_match_a_hand_computation():
    # two examples, three epochs; gold labels 1 and 0
    epoch_probs = [np.array([[0.2, 0.8], [0.3, 0.7]]), np.array([[0.4, 0.6], [0.6, 0.4]]),
                   np.array([[0.6, 0.4], [0.9, 0.1]])]
    dm = data_map(epoch_probs, np.array([1, 0]))
    # example 0: p(gold) = .8, .6, .4 -> mean .6, population std sqrt(((.2)^2 + 0 + (.2)^2) / 3); correct 2 of 3
    # example 1: p(gold) = .3, .6, .9 -> mean .6, std sqrt(((.3)^2 + 0 + (.3)^2) / 3); argmax gold in epochs 2, 3
    np.testing.assert_allclose(dm.confidence, [0.6, 0.6])
    np.testing.assert_allclose(dm.variability, [np.sqrt(0.08 / 3), np.sqrt(0.18 / 3)])
    np.testing.assert_allclose(dm.correctness, [2 / 3, 2 / 3])


def test_loss_and_el2n_match_hand_computation():
    probs = np.array([[0.9, 0.1], [0.25, 0.75]])
    labels = np.array([1, 1])
    ctx = ScoringContext(labels, probs, providers={"el2n_runs": lambda: [probs, np.array([[0.5, 0.5], [0.5, 0.5]])]})
    np.testing.assert_allclose(compute("loss", ctx), [-np.log(0.1), -np.log(0.75)])
    run1 = np.array([np.hypot(0.9, 0.9), np.hypot(0.25, 0.25)])
    run2 = np.array([np.hypot(0.5, 0.5)] * 2)
    np.testing.assert_allclose(compute("el2n", ctx), (run1 + run2) / 2)


def test_label_free_scores_rank_uncertain_rows_highest():
    probs = np.array([[0.99, 0.01], [0.5, 0.5], [0.7, 0.3]])
    ctx = ScoringContext(None, probs)
    assert set(label_free_scores()) >= {"entropy", "margin"}
    for name in ("entropy", "margin"):
        assert np.argsort(-compute(name, ctx)).tolist() == [1, 2, 0]


def test_gold_label_score_without_labels_says_what_to_use():
    with pytest.raises(ValueError, match="label-free"):
        compute("loss", ScoringContext(None, np.array([[0.5, 0.5]])))


def test_unknown_score_is_refused():
    with pytest.raises(KeyError, match="unknown score"):
        compute("vibes", ScoringContext(None, np.array([[0.5, 0.5]])))


def test_epoch_probs_feed_data_map_scores(sst2_slice):
    feats = np.random.default_rng(0).normal(size=(len(sst2_slice), 8)).astype(np.float32)
    run = train_linear_head(feats, sst2_slice.labels, 2, epochs=3, record_epochs=True)
    assert len(run.epoch_probs) == 3
    ctx = ScoringContext(sst2_slice.labels, run.epoch_probs[-1], providers={"epoch_probs": lambda: run.epoch_probs})
    assert compute("datamap_low_confidence", ctx).shape == (len(sst2_slice),)


def test_sanity_figures():
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    assert share_misclassified(np.array([0, 1, 2]), probs, np.array([1, 1, 0])) == pytest.approx(1 / 3)
    assert overlap(np.array([1, 2, 3, 4]), np.array([3, 4, 5, 6])) == 0.5
    rho = spearman_matrix({"a": np.array([1.0, 2, 3]), "b": np.array([10.0, 20, 30]), "c": np.array([3.0, 2, 1])})
    assert rho[("a", "b")] == pytest.approx(1.0) and rho[("a", "c")] == pytest.approx(-1.0)


def test_finetuned_weak_scorer_gives_probabilities_and_features(tiny_encoder, tokenizer, sst2_slice):
    from hardness.scorers import FeatureScorer, finetuned_scorer

    scorer = finetuned_scorer(tiny_encoder, tokenizer, sst2_slice.texts, sst2_slice.labels, ["negative", "positive"])
    inputs = [{"text": t} for t in sst2_slice.texts[:5]]
    probs = scorer.predict_proba(inputs)
    assert isinstance(scorer, FeatureScorer) and probs.shape == (5, 2)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-6)
