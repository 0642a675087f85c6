from __future__ import annotations

import numpy as np
import pytest

from hardness.services import seed_round
from tasks.models import Context, LabeledItem
from tests.factories import ContextFactory, LabeledItemFactory, RoundFactory, TaskFactory

LABELS = ["negative", "positive"]


def length_scorer(inputs):
    """A deterministic stand-in for the round's model: longer texts look more positive."""
    p = np.array([min(len(i["text"]) / 120.0, 0.98) + 0.01 for i in inputs])
    return np.stack([1 - p, p], axis=1)


@pytest.fixture
def sentiment_task(db):
    return TaskFactory(slug="sst", kind="sentiment", config={"labels": LABELS})


@pytest.fixture
def pool(sentiment_task, sst2_slice):
    for text, label in zip(sst2_slice.texts, sst2_slice.labels, strict=True):
        LabeledItemFactory(task=sentiment_task, collection="sst2", input={"text": text}, target=LABELS[label])
    for text in sst2_slice.texts[:20]:
        ContextFactory(task=sentiment_task, payload={"prompt": text})
    return sentiment_task


def _seeded_items(rnd) -> list[int]:
    return list(LabeledItem.objects.filter(seed_round=rnd).values_list("id", flat=True))


def test_round_seeding_marks_k_hardest_items_per_label(pool):
    rnd = RoundFactory(task=pool, number=1)
    result = seed_round(pool, rnd, 3, score="loss", scorer=length_scorer)
    seeded = LabeledItem.objects.filter(seed_round=rnd)
    assert result.items_seeded == 6
    assert sorted(seeded.values_list("target", flat=True)) == ["negative"] * 3 + ["positive"] * 3
    for label in LABELS:
        mine = LabeledItem.objects.filter(task=pool, target=label)
        cutoff = min(mine.filter(seed_round=rnd).values_list("hardness_score", flat=True))
        assert all(s <= cutoff for s in mine.filter(seed_round=None).values_list("hardness_score", flat=True))
    assert not LabeledItem.objects.filter(task=pool, hardness_score=None).exists()


def test_round_seeding_marks_contexts_with_a_label_free_score(pool):
    rnd = RoundFactory(task=pool, number=1)
    result = seed_round(pool, rnd, 2, scorer=length_scorer)
    seeds = Context.objects.filter(task=pool, is_seed=True)
    assert result.contexts_seeded == seeds.count() <= 4
    assert set(seeds.values_list("round", flat=True)) == {rnd.pk}
    assert not Context.objects.filter(task=pool, hardness_score=None).exists()
    assert not Context.objects.filter(task=pool, is_seed=False, round=rnd).exists()


def test_round_seeding_is_idempotent(pool):
    rnd = RoundFactory(task=pool, number=1)
    first = seed_round(pool, rnd, 3, scorer=length_scorer)
    items, contexts = _seeded_items(rnd), list(Context.objects.filter(is_seed=True).values_list("id", flat=True))
    second = seed_round(pool, rnd, 3, scorer=length_scorer)
    assert first == second
    assert _seeded_items(rnd) == items
    assert list(Context.objects.filter(is_seed=True).values_list("id", flat=True)) == contexts


def test_a_later_round_does_not_reuse_earlier_seeds(pool):
    r1, r2 = RoundFactory(task=pool, number=1), RoundFactory(task=pool, number=2, status="draft")
    seed_round(pool, r1, 3, scorer=length_scorer)
    seed_round(pool, r2, 3, scorer=length_scorer)
    assert not set(_seeded_items(r1)) & set(_seeded_items(r2))
    assert len(_seeded_items(r1)) == len(_seeded_items(r2)) == 6


def test_round_of_another_task_is_refused(pool):
    other = RoundFactory(task=TaskFactory(slug="other"), number=1)
    with pytest.raises(ValueError, match="does not belong"):
        seed_round(pool, other, 3, scorer=length_scorer)


def test_head_scorer_supports_gradnorm_seeding(pool, tiny_encoder, tokenizer, sst2_slice):
    from hardness.encoding import embed_texts
    from hardness.scorers import FeatureScorer, frozen_head_scorer

    feats = embed_texts(tiny_encoder, tokenizer, sst2_slice.texts)
    scorer = frozen_head_scorer(tiny_encoder, tokenizer, feats, sst2_slice.labels, LABELS)
    assert isinstance(scorer, FeatureScorer)
    rnd = RoundFactory(task=pool, number=1)
    result = seed_round(pool, rnd, 4, score="gradnorm", scorer=scorer)
    assert result.items_seeded == 8 and 0.0 <= result.seeds_misclassified <= 1.0


def test_without_a_scorer_seeding_fits_the_weak_scorer_on_the_items(pool):
    rnd = RoundFactory(task=pool, number=1)
    result = seed_round(pool, rnd, 2, encoder_name="tiny")
    assert result.items_seeded == 4 and result.items_scored == 48
    assert LabeledItem.objects.filter(seed_round=rnd).count() == 4
