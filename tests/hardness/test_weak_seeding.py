"""Hard-Bench seeding: the weak scorer is trained on the sampled pool, the task's score, k and pool_max are
honoured, QA is scored by span loss, and pairs are encoded as two segments."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hardness.encoding import embed_texts
from hardness.services import item_inputs, item_key, item_pool, seed_round, stable_sample
from hardness.weak import schedule
from tasks.models import Context, LabeledItem
from tests.factories import ContextFactory, LabeledItemFactory, RoundFactory, TaskFactory

LABELS = ["negative", "positive"]


def sentiment_task(slug: str, rows, seeding: dict | None = None, order=None):
    task = TaskFactory(slug=slug, kind="sentiment", config={"labels": LABELS, "seeding": seeding or {}})
    for i in order if order is not None else range(len(rows)):
        text, label = rows[i]
        LabeledItemFactory(task=task, collection="sst2", input={"text": text}, target=LABELS[label])
    return task


@pytest.fixture
def sst_rows(sst2_slice):
    return list(zip(sst2_slice.texts, sst2_slice.labels.tolist(), strict=True))


def test_a_small_pool_gets_at_least_min_steps_updates_and_a_large_one_one_epoch():
    small = schedule(60, 50)
    assert small.batch_size == 8 and small.epochs * -(-60 // 8) >= 50  # not 2 updates at batch 32
    large = schedule(20_000, 50)
    assert (large.batch_size, large.epochs) == (32, 1)


def test_the_weak_scorer_is_trained_on_exactly_the_sampled_pool_and_its_pool_loss_drops(db, sst_rows, tiny_encoder, tokenizer):
    task = sentiment_task("weak", sst_rows, {"pool_max": 30, "min_steps": 60, "k_per_label": 2})
    rnd = RoundFactory(task=task, number=1)
    result = seed_round(task, rnd, encoder=tiny_encoder, tokenizer=tokenizer)
    sampled = stable_sample(list(item_pool(task, rnd)), 30, 0, item_key)
    assert result.pool_size == 48 and result.items_scored == 30
    assert result.scorer.train_inputs == item_inputs(task, sampled)  # its training set is the sampled pool
    assert result.training.n_train == 30 and result.training.steps >= 60
    assert result.training.loss_after < result.training.loss_before
    scored = set(LabeledItem.objects.filter(task=task, hardness_score__isnull=False).values_list("id", flat=True))
    assert scored == {i.id for i in sampled}  # items outside the sample are not scored


def test_pool_max_samples_the_same_items_whatever_the_pool_order(db, sst_rows, tiny_encoder, tokenizer):
    forward = sentiment_task("forward", sst_rows, {"pool_max": 20, "k_per_label": 3})
    backward = sentiment_task("backward", sst_rows, {"pool_max": 20, "k_per_label": 3},
                              order=range(len(sst_rows) - 1, -1, -1))
    chosen = {}
    for task in (forward, backward):
        rnd = RoundFactory(task=task, number=1)
        first = seed_round(task, rnd, encoder=tiny_encoder, tokenizer=tokenizer)
        assert first.items_scored == 20
        sample = stable_sample(list(item_pool(task, rnd)), 20, 0, item_key)
        chosen[task.slug] = (sorted(i.key for i in sample),
                             sorted(LabeledItem.objects.filter(seed_round=rnd).values_list("key", flat=True)))
        again = seed_round(task, rnd, encoder=tiny_encoder, tokenizer=tokenizer)
        assert again == first
        assert sorted(LabeledItem.objects.filter(seed_round=rnd).values_list("key", flat=True)) == chosen[task.slug][1]
    assert chosen["forward"] == chosen["backward"]  # same sample, same seeds
    other_seed = stable_sample(list(item_pool(forward, None)), 20, 1, item_key)
    assert sorted(i.key for i in other_seed) != chosen["forward"][0]  # the seed setting changes the sample
    assert {i.key for i in stable_sample(list(item_pool(forward, None)), 10, 0, item_key)} <= set(chosen["forward"][0])


def test_k_per_label_from_the_task_settings_is_honoured(db, sst_rows, tiny_encoder, tokenizer):
    task = sentiment_task("kper", sst_rows, {"k_per_label": 4})
    rnd = RoundFactory(task=task, number=1)
    result = seed_round(task, rnd, encoder=tiny_encoder, tokenizer=tokenizer)
    seeded = LabeledItem.objects.filter(seed_round=rnd)
    assert result.items_seeded == 8
    assert sorted(seeded.values_list("target", flat=True)) == ["negative"] * 4 + ["positive"] * 4


# A constructed pool of three items of the gold label "a" (3 labels) where loss and EL2N disagree:
# item 0: p = (0.40, 0.30, 0.30): loss 0.92, EL2N 0.73 — the hardest by loss;
# item 1: p = (0.45, 0.55, 0.00): loss 0.80, EL2N 0.78 — the hardest by EL2N (its error is concentrated);
# item 2: p = (0.90, 0.05, 0.05): easy by both.
FIXED = {"zero": [0.40, 0.30, 0.30], "one": [0.45, 0.55, 0.00], "two": [0.90, 0.05, 0.05]}


def fixed_scorer(inputs):
    return np.array([FIXED[i["text"]] for i in inputs])


@pytest.mark.parametrize(("score", "hardest"), [("loss", "zero"), ("el2n", "one")])
def test_the_task_s_chosen_score_decides_the_seeds(db, score, hardest):
    task = TaskFactory(slug=f"fixed-{score}", kind="classification",
                       config={"labels": ["a", "b", "c"], "seeding": {"score": score, "k_per_label": 1}})
    for text in FIXED:
        LabeledItemFactory(task=task, input={"text": text}, target="a")
    rnd = RoundFactory(task=task, number=1)
    result = seed_round(task, rnd, scorer=fixed_scorer)
    assert result.score == score
    assert [i.input["text"] for i in LabeledItem.objects.filter(seed_round=rnd)] == [hardest]


NLI_ROWS = [
    ("A man is playing a guitar on stage.", "A man is performing music.", "entailment"),
    ("A man is playing a guitar on stage.", "A woman is sleeping at home.", "contradiction"),
    ("A man is playing a guitar on stage.", "The man is a famous singer.", "neutral"),
    ("Two dogs run across a snowy field.", "Animals are outside.", "entailment"),
    ("Two dogs run across a snowy field.", "The dogs are asleep indoors.", "contradiction"),
    ("Two dogs run across a snowy field.", "The dogs are chasing a ball.", "neutral"),
    ("A child eats an apple in the kitchen.", "A kid is eating fruit.", "entailment"),
    ("A child eats an apple in the kitchen.", "The child is swimming.", "contradiction"),
    ("A child eats an apple in the kitchen.", "The apple is from the market.", "neutral"),
]


@pytest.fixture
def nli_task(db):
    task = TaskFactory(slug="nli", kind="nli", config={"seeding": {"k_per_label": 1, "score": "gradnorm_deep"}})
    for premise, hypothesis, label in NLI_ROWS:
        LabeledItemFactory(task=task, context={"premise": premise}, input={"hypothesis": hypothesis}, target=label)
    for premise in dict.fromkeys(p for p, _, _ in NLI_ROWS):
        ContextFactory(task=task, payload={"premise": premise})
    ContextFactory(task=task, payload={"premise": "A premise without any pool item."})
    return task


def test_nli_is_seeded_with_premise_and_hypothesis_as_a_pair(nli_task, tiny_encoder, tokenizer):
    rnd = RoundFactory(task=nli_task, number=1)
    result = seed_round(nli_task, rnd, encoder=tiny_encoder, tokenizer=tokenizer)
    assert result.items_seeded == 3 and result.score == "gradnorm_deep"  # one per label
    rows = [(p, h) for p, h, _ in NLI_ROWS]
    pairs = embed_texts(tiny_encoder, tokenizer, rows)
    joined = embed_texts(tiny_encoder, tokenizer, [f"{p} [SEP] {h}" for p, h in rows])
    order = [rows.index((i["text"], i["text_pair"])) for i in result.scorer.train_inputs]
    np.testing.assert_allclose(result.scorer.pool_features, pairs[order], rtol=1e-5, atol=1e-6)
    assert not np.allclose(result.scorer.pool_features, joined[order], atol=1e-4)  # segment ids differ
    # a premise takes the highest score of the pool items written on it; one without items is not scored
    for context in Context.objects.filter(task=nli_task):
        scores = [i.hardness_score for i in LabeledItem.objects.filter(task=nli_task, context=context.payload)]
        assert context.hardness_score == (max(scores) if scores else None)
    assert Context.objects.filter(task=nli_task, is_seed=True, round=rnd).exists()
    assert not Context.objects.filter(task=nli_task, hardness_score=None, is_seed=True).exists()


@pytest.fixture
def squad_rows(data_dir):
    rows = []
    with (data_dir / "squad_subset" / "squad_subset.jsonl").open() as f:
        for line in f:
            row = json.loads(line)
            if row["source_split"] == "squad_v1.1_train":  # never the dev rows
                rows.append(row)
            if len(rows) == 24:
                break
    return rows


@pytest.fixture
def qa_task(db, squad_rows):
    task = TaskFactory(slug="qa", kind="qa", config={"seeding": {"k_per_label": 5}})
    for row in squad_rows:
        LabeledItemFactory(task=task, collection="squad", context={"passage": row["context"]},
                           input={"question": row["question"]},
                           target={"text": row["answers"]["text"][0], "start": row["answers"]["answer_start"][0]})
    for passage in dict.fromkeys(r["context"] for r in squad_rows):
        ContextFactory(task=task, payload={"passage": passage})
    return task


def test_qa_is_seeded_by_span_loss_under_a_weak_scorer_trained_on_the_pool(qa_task, tiny_encoder, tokenizer):
    rnd = RoundFactory(task=qa_task, number=1)
    result = seed_round(qa_task, rnd, encoder=tiny_encoder, tokenizer=tokenizer)
    assert result.items_scored == 24 and result.items_seeded == 5  # k in all: QA has no labels
    assert result.training.n_train == 24 and result.training.loss_after < result.training.loss_before
    np.testing.assert_allclose(sorted(LabeledItem.objects.filter(task=qa_task).values_list("hardness_score", flat=True)),
                               sorted(result.scorer.span_loss))
    # span loss = start + end cross-entropy: at least 2·log(1/1) = 0, and for an unsure head near 2·log(tokens)
    seeded = sorted(LabeledItem.objects.filter(seed_round=rnd).values_list("hardness_score", flat=True))
    rest = LabeledItem.objects.filter(task=qa_task, seed_round=None).values_list("hardness_score", flat=True)
    assert min(seeded) >= max(rest)
    seeded_contexts = Context.objects.filter(task=qa_task, is_seed=True, round=rnd)
    assert 1 <= seeded_contexts.count() <= 5
    for context in seeded_contexts:
        assert context.hardness_score == max(LabeledItem.objects.filter(task=qa_task, context=context.payload)
                                             .values_list("hardness_score", flat=True))


@pytest.mark.parametrize("score", ["el2n", "gradnorm"])
def test_qa_supports_el2n_and_head_gradnorm(qa_task, tiny_encoder, tokenizer, score):
    qa_task.config = {**qa_task.config, "seeding": {"k_per_label": 3, "score": score}}
    qa_task.save()
    rnd = RoundFactory(task=qa_task, number=1)
    result = seed_round(qa_task, rnd, encoder=tiny_encoder, tokenizer=tokenizer)
    values = result.scorer.score(score)
    assert result.items_seeded == 3 and np.all(values >= 0) and not np.allclose(values, result.scorer.span_loss)


def test_qa_offers_the_span_scores_only_and_a_smaller_pool(db):
    from pydantic import ValidationError

    from tasks.config_form import ConfigForm

    task = TaskFactory(slug="qa-bad", kind="qa")
    with pytest.raises(ValidationError, match="seeding.score"):
        task.kind_impl.parse_config({"seeding": {"score": "gradnorm_deep"}})
    assert task.kind_impl.parse_config({"seeding": {"k_per_label": 3}}).seeding.pool_max == 1000
    form = ConfigForm(task=task)
    assert [v for v, _ in form.fields["seeding__score"].choices] == ["loss", "gradnorm", "el2n"]


def test_the_seed_round_command_uses_the_task_settings_unless_told(db, sst_rows):
    from io import StringIO

    from django.core.management import call_command

    task = sentiment_task("command", sst_rows, {"k_per_label": 2, "pool_max": 24, "score": "gradnorm"})
    rnd = RoundFactory(task=task, number=1)
    out = StringIO()
    call_command("seed_round", "command", "1", "--encoder", "tiny", stdout=out)
    assert "scored 24 of 48 pool items by gradnorm" in out.getvalue() and "trained on the 24 sampled" in out.getvalue()
    assert LabeledItem.objects.filter(seed_round=rnd).count() == 4
    call_command("seed_round", "command", "1", "--encoder", "tiny", "--k", "3", "--score", "loss", stdout=out)
    assert "by loss" in out.getvalue() and LabeledItem.objects.filter(seed_round=rnd).count() == 6
