"""AFLite as a hardness selection (hardness.aflite, the "aflite" seeding score)."""

from __future__ import annotations

import numpy as np
import pytest

from hardness import scores
from hardness.aflite import PAPER_M, PAPER_TAU, aflite, hardness_scores, predictability, resolve

LABELS = ["negative", "positive"]


def spurious_case(n: int = 400, d: int = 6, seed: int = 0):
    """Binary labels; the first half of the instances carries a feature that gives its label away (a spurious
    cue a linear probe finds), the second half lacks it (0 there) and has only noise. Returns (X, y, has_cue)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d))
    has_cue = np.arange(n) < n // 2
    X[:, 0] = np.where(has_cue, 4.0 * (2 * y - 1) + rng.normal(size=n), 0.0)
    return X, y, has_cue


def test_instances_with_the_spurious_cue_are_filtered_and_the_others_kept():
    X, y, has_cue = spurious_case()
    result = aflite(X, y, m=16, t=0.2, k=0.05, n=0.2, seed=0)
    assert result.keep[has_cue].mean() <= 0.1  # what the probes find easy is gone
    assert result.keep[~has_cue].mean() >= 0.85  # the rest is what stays
    assert result.iterations >= 2 and result.stopped_by == "threshold"  # before the target size of 80
    removed = result.removed_at[has_cue & ~result.keep]
    assert (removed >= 0).all() and (result.removed_at[result.keep] == -1).all()


def test_the_filter_stops_at_the_target_size_and_at_the_threshold():
    X, y, _ = spurious_case()
    small = aflite(X, y, m=8, t=0.2, k=0.05, n=150, tau=0.0, seed=0)  # τ = 0: everything qualifies
    assert small.keep.sum() == 150 and small.stopped_by == "target"
    none = aflite(X, y, m=8, t=0.2, k=0.05, n=0.1, tau=1.0, seed=0)  # only always-right instances qualify
    assert none.stopped_by == "threshold" and none.keep.sum() > 40


def test_the_same_seed_gives_the_same_selection():
    X, y, _ = spurious_case(seed=3)
    first = aflite(X, y, m=8, t=0.2, k=0.05, n=0.4, seed=7)
    again = aflite(X, y, m=8, t=0.2, k=0.05, n=0.4, seed=7)
    assert np.array_equal(first.keep, again.keep) and np.array_equal(first.predictability, again.predictability)


def test_the_paper_parameters_are_the_defaults_and_scale_with_the_data():
    params = resolve(550_000)
    assert (params.m, params.tau) == (PAPER_M, PAPER_TAU) == (64, 0.75)
    assert (params.t, params.k, params.n) == (50_000, 10_000, 92_000)  # the paper's SNLI sizes
    assert resolve(5_500).t == 500 and resolve(5_500, t=300).t == 300  # a share, or a count


@pytest.mark.parametrize("kwargs, message", [
    ({"m": 0}, "m .* positive int"),
    ({"tau": 1.5}, "tau .* in \\[0, 1\\]"),
    ({"t": 1.5}, "t as a share .* \\(0, 1\\)"),
    ({"t": 399}, "t \\(probe training size\\)"),
    ({"k": 0}, "k \\(slice size\\)"),
    ({"n": 400}, "n \\(target size\\)"),
    ({"n": "half"}, "n must be a count"),
])
def test_bad_parameters_are_refused_with_the_reason(kwargs, message):
    X, y, _ = spurious_case()
    with pytest.raises(ValueError, match=message):
        aflite(X, y, **kwargs)


def test_bad_data_is_refused_with_the_reason():
    X, y, _ = spurious_case()
    with pytest.raises(ValueError, match="differ in length: 400 embeddings, 399 labels"):
        aflite(X, y[:-1])
    with pytest.raises(ValueError, match="2-D array"):
        aflite(X[:, 0], y)
    with pytest.raises(ValueError, match="at least 3 instances"):
        aflite(X[:2], y[:2])


def test_the_registry_score_ranks_the_filtered_subset_hardest():
    X, y, has_cue = spurious_case()
    ctx = scores.ScoringContext(y, np.full((len(y), 2), 0.5), X)
    values = scores.compute("aflite", ctx)
    result = aflite(X, y)  # the score runs the paper's defaults, seed 0
    assert np.array_equal(values, hardness_scores(result))
    assert values[result.keep].min() > values[~result.keep].max()
    assert values[~has_cue].mean() > values[has_cue].mean()
    with pytest.raises(KeyError, match="aflite needs the scorer's features"):
        scores.compute("aflite", scores.ScoringContext(y, np.full((len(y), 2), 0.5)))


def test_a_sentiment_tasks_settings_accept_aflite_and_a_qa_tasks_refuse_it():
    from pydantic import ValidationError

    from tasks.kinds import get_kind

    assert get_kind("sentiment").parse_config({"seeding": {"score": "aflite"}}).seeding.score == "aflite"
    with pytest.raises(ValidationError):
        get_kind("qa").parse_config({"seeding": {"score": "aflite"}})


@pytest.mark.django_db
def test_round_seeding_with_aflite_marks_k_per_label(sst2_slice):
    from hardness.services import seed_round
    from tasks.models import LabeledItem
    from tests.factories import LabeledItemFactory, RoundFactory, TaskFactory

    task = TaskFactory(slug="sst-aflite", kind="sentiment",
                       config={"labels": LABELS, "seeding": {"score": "aflite"}})
    for text, label in zip(sst2_slice.texts, sst2_slice.labels, strict=True):
        LabeledItemFactory(task=task, collection="sst2", input={"text": text}, target=LABELS[label])
    rnd = RoundFactory(task=task, number=1)
    result = seed_round(task, rnd, 3, encoder_name="tiny", include_contexts=False)
    assert result.score == "aflite" and result.items_scored == 48 and result.items_seeded == 6
    seeded = LabeledItem.objects.filter(seed_round=rnd)
    assert sorted(seeded.values_list("target", flat=True)) == ["negative"] * 3 + ["positive"] * 3
    assert not LabeledItem.objects.filter(task=task, hardness_score=None).exists()


def test_the_batched_probes_agree_with_scikit_learns_logistic_regression():
    X, y, _ = spurious_case(n=300, seed=5)
    rng = np.random.default_rng(0)
    fast = predictability(X, y, 6, 120, rng)
    reference = predictability(X, y, 6, 120, np.random.default_rng(0), probe="sklearn")
    assert np.abs(fast - reference).mean() <= 0.03  # the same partitions, nearly the same predictions
    with pytest.raises(ValueError, match="probe must be one of torch, sklearn"):
        aflite(X, y, probe="svm")
