"""Retraining adds a round instead of replacing the model: it learns from the base data and every round verified so
far with the newest round weighted, stops early on a dev set that holds old and new rows, and the approval gate
compares on a held-out slice of the base training data, so forgetting the base data never deploys silently."""

from __future__ import annotations

from collections import Counter

import pytest

from annotation.models import Example
from modelzoo import ensemble_training
from modelzoo.models import ModelVersion
from modelzoo.services import default_spec, deploy_ensemble, train_model
from rounds import datasets, services
from rounds.models import PipelineRun
from tasks.models import LabeledItem, Round
from tests.factories import ExampleFactory, LabeledItemFactory, RoundFactory, TaskFactory, UserFactory
from tests.rounds.conftest import sentence


def base_items(task, n: int, split: str = "train", start: int = 0) -> set[str]:
    keys = set()
    for i in range(n):
        label = "positive" if i % 2 else "negative"
        keys.add(LabeledItemFactory(task=task, split=split, input={"text": sentence(label, start + i)},
                                    target=label).key)
    return keys


def round_examples(round_, n: int, start: int, writer=None, split: str | None = "train") -> list[Example]:
    writer = writer or UserFactory()
    out = []
    for i in range(n):
        label = "positive" if i % 2 else "negative"
        out.append(ExampleFactory(round=round_, context=None, author=writer, input={"text": sentence(label, start + i)},
                                  target=label, fooled=False, consensus=Example.Consensus.VERIFIED, split=split))
    return out


def keys_of(round_) -> set[str]:
    return set(datasets.round_split(round_.task, round_, "train").keys)


@pytest.fixture
def grown(db):
    """A task with 60 base train rows, 10 held out, 8 base test rows, a closed round 1 (30 train examples) and an
    open round 2 (40 train examples): the round being closed."""
    task = TaskFactory(slug="grown", kind="sentiment")
    base = base_items(task, 60)
    held = base_items(task, 10, split=LabeledItem.Split.HELD_OUT, start=500)
    base_items(task, 8, split="test", start=600)
    round1 = RoundFactory(task=task, number=1, status=Round.Status.CLOSED)
    round2 = RoundFactory(task=task, number=2, status=Round.Status.OPEN)
    round_examples(round1, 30, start=1000)
    round_examples(round2, 40, start=2000)
    return task, base, held, round1, round2


def test_retraining_learns_from_the_base_data_and_every_rounds_train_split(grown):
    task, base, held, round1, round2 = grown
    plan = datasets.training_plan(task, newest=2)
    seen = set(plan.train.keys) | set(plan.dev.keys)
    assert seen == base | keys_of(round1) | keys_of(round2)
    assert not seen & held  # the held-out slice is never trained on, nor used for early stopping
    assert [p.name for p in plan.parts] == ["base", "round 1", "round 2"]
    assert [p.rows for p in plan.parts] == [60, 30, 40]
    assert plan.newest == 2 and "round-1,2/train" in plan.train.name


def test_the_newest_round_counts_as_often_as_its_weight(grown):
    task, base, _held, round1, round2 = grown
    task.config = {"retraining": {"new_round_weight": 3}}
    task.save()
    plan = datasets.training_plan(task, newest=2)
    counts = Counter(plan.train.keys)
    trained_new = keys_of(round2) - set(plan.dev.keys)
    assert {counts[k] for k in trained_new} == {3}
    assert {counts[k] for k in (base | keys_of(round1)) - set(plan.dev.keys)} == {1}
    assert plan.parts[2].train == 3 * len(trained_new) and plan.weight == 3.0
    # A fractional weight: every row twice, a stable half of them a third time.
    half = datasets.training_plan(task, newest=2, weight=2.5)
    copies = Counter(half.train.keys)
    assert {copies[k] for k in trained_new} == {2, 3}
    assert 0.2 < sum(copies[k] == 3 for k in trained_new) / len(trained_new) < 0.8
    assert Counter(datasets.training_plan(task, newest=2, weight=2.5).train.keys) == copies  # stable
    # Weight 1 treats every row alike; a closing round without training rows weights nothing.
    assert set(Counter(datasets.training_plan(task, newest=2, weight=1).train.keys).values()) == {1}
    assert set(Counter(datasets.training_plan(task, newest=7).train.keys).values()) == {1}


def test_the_dev_set_holds_base_and_new_round_rows_and_no_row_on_both_sides(grown):
    task, base, _held, round1, round2 = grown
    plan = datasets.training_plan(task, newest=2)
    dev = set(plan.dev.keys)
    assert dev & base and dev & keys_of(round2) and dev & keys_of(round1)
    assert not dev & set(plan.train.keys)  # carved before the copies: no copy on the other side
    assert [p.dev for p in plan.parts] == [6, 3, 4]  # each source its own ~10 %
    assert len(plan.dev.keys) == len(dev)
    # The dev rows are stable, and the newest round keeps its share of a large task's capped dev set.
    assert set(datasets.training_plan(task, newest=2).dev.keys) == dev
    quotas = datasets.dev_quotas({"base": 10_000, "round 1": 300, "round 2": 300}, "round 2")
    assert quotas["round 2"] == 30 and sum(quotas.values()) <= datasets.DEV_MAX
    assert quotas["base"] > quotas["round 1"] > 0
    big_new = datasets.dev_quotas({"base": 10_000, "round 2": 5_000}, "round 2")
    assert big_new["round 2"] == datasets.DEV_MAX // 2 and big_new["base"] == datasets.DEV_MAX // 2
    assert sum(datasets.dev_quotas({"base": 20, "round 1": 10}, "round 1").values()) == 0  # too small for a dev set


def test_the_base_held_out_slice_is_a_test_set(grown):
    task, _base, held, _round1, _round2 = grown
    assert datasets.test_sets(task)[-2:] == [datasets.BASE_TEST, datasets.BASE_HELD_OUT]
    assert set(datasets.load(task, datasets.BASE_HELD_OUT).keys) == held
    assert datasets.dataset_label(datasets.BASE_HELD_OUT) == "base held-out"


# --- through the pipeline (tiny models) ------------------------------------------------------------------


@pytest.fixture
def owner(db):
    return UserFactory(username="grower")


def pipeline_task(owner, slug: str, *, flipped: bool = False, base_test: bool = True):
    """Base train rows (24), a held-out slice (8) and optionally a base test set (8); an open round 1 with 30
    verified, unfooled examples (all train). `flipped`: validators relabelled them wrongly, so a retraining on them
    learns nonsense."""
    task = TaskFactory(slug=slug, kind="sentiment")
    task.owners.add(owner)
    base_items(task, 24)
    base_items(task, 8, split=LabeledItem.Split.HELD_OUT, start=100)
    if base_test:
        base_items(task, 8, split="test", start=300)
    round1 = RoundFactory(task=task, number=1, status=Round.Status.OPEN)
    for example in round_examples(round1, 30, start=200, split=None):
        if flipped:
            example.validated_label = "negative" if example.target == "positive" else "positive"
            example.save(update_fields=["validated_label"])
    return task


def test_the_pipeline_hands_training_the_weighted_rows_and_a_dev_set_of_old_and_new(owner, monkeypatch):
    task = pipeline_task(owner, "weighted")
    handed = {}
    real = ensemble_training.train_ensemble

    def spy(task_, labelled, seeds, **kwargs):
        handed.update(labelled=labelled, dev=kwargs["dev"])
        return real(task_, labelled, seeds, **kwargs)

    monkeypatch.setattr(ensemble_training, "train_ensemble", spy)
    run = services.start_pipeline(task, owner)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE, run.error
    round1 = task.rounds.get(number=1)
    new = keys_of(round1)
    base = set(LabeledItem.objects.filter(task=task, split="train").values_list("key", flat=True))
    counts, dev = Counter(handed["labelled"].keys), set(handed["dev"].keys)
    assert len(new) == 30 and dev & new and dev & base and not dev & set(counts)
    assert {counts[k] for k in new - dev} == {2}  # retraining.new_round_weight's default
    assert {counts[k] for k in base - dev} == {1}
    retrain = run.steps.get(name="retrain")
    assert retrain.result["data"]["new_round_weight"] == 2.0 and retrain.result["data"]["newest_round"] == 1
    assert "round 1 (the newest) weighted 2" in retrain.log and f"dev set {len(dev)} rows" in retrain.log
    assert "base: 24 rows" in retrain.log
    # The new models were scored on the base held-out slice too.
    sets = run.steps.get(name="evaluate").result["test_sets"]
    assert datasets.BASE_HELD_OUT in sets
    versions = ModelVersion.objects.filter(pk__in=retrain.result["versions"])
    assert all(v.evaluations.filter(dataset=datasets.BASE_HELD_OUT, size=8).exists() for v in versions)


def test_a_retraining_that_forgets_the_base_held_out_slice_waits_for_approval(owner, client, small_sets_decide):
    # No base test set and no round test split: the held-out slice is the only set the gate can see it on.
    task = pipeline_task(owner, "forgets", flipped=True, base_test=False)
    spec = default_spec(task, seed=0, epochs=30, lr=1e-3, batch_size=8, encoder="tiny")
    live = [train_model(task, spec, name="live-r1")]
    deploy_ensemble(task.rounds.get(number=1), live)
    run = services.start_pipeline(task, owner)
    run.refresh_from_db()
    compare = run.steps.get(name="compare")
    assert run.status == PipelineRun.Status.AWAITING, run.error or compare.log
    rows = {r["dataset"]: r for r in run.comparison["rows"]}
    assert set(rows) == {datasets.BASE_HELD_OUT}
    assert rows[datasets.BASE_HELD_OUT]["delta"] < -1.0 and run.comparison["worse"] == ["base held-out"]
    assert "worse on the base held-out slice" in compare.log
    client.force_login(owner)
    page = client.get(f"/console/jobs/{run.pk}/").content.decode()
    assert 'id="comparison-table"' in page and "base held-out" in page
