from __future__ import annotations

import pytest

from annotation.models import Example
from exports import splits
from exports.splits import SplitRule
from tests.exports.conftest import make_example, vote
from tests.factories import RoundFactory, TaskFactory

pytestmark = pytest.mark.django_db


def stored_splits(round) -> dict[int, str | None]:
    return dict(Example.objects.filter(round=round).values_list("id", "split"))


def test_split_assignment_is_stable_across_reexports_and_new_validations(mixed_round, open_round):
    splits.assign_splits(open_round)
    first = {k: v for k, v in stored_splits(open_round).items() if v}
    for example in mixed_round["unverified"]:
        vote(example, "correct", "correct")
        Example.objects.filter(pk=example.pk).update(consensus="verified")
    Example.objects.filter(pk=mixed_round["verified"][0].pk).update(consensus="rejected")
    splits.assign_splits(open_round)
    second = stored_splits(open_round)
    assert all(second[pk] == split for pk, split in first.items())
    assert all(second[e.pk] is not None for e in mixed_round["unverified"])


def test_split_follows_from_the_task_seed_and_example_id_alone(open_round):
    rule = SplitRule.of(open_round.task)
    assert [rule.bucket(i) for i in range(200)] == [SplitRule.of(open_round.task).bucket(i) for i in range(200)]
    other_seed = SplitRule(rule.task_id, rule.seed + 1, rule.train, rule.dev)
    assert [rule.bucket(i) for i in range(200)] != [other_seed.bucket(i) for i in range(200)]


def test_verified_fooling_examples_are_spread_by_the_configured_ratios(db):
    task = TaskFactory(slug="ratios", config={"splits": {"train": 0.5, "dev": 0.25, "test": 0.25, "seed": 7}})
    round = RoundFactory(task=task, number=1)
    for _ in range(400):
        make_example(round, consensus="verified")
    splits.assign_splits(round)
    counts = {name: splits.in_split(round, name).count() for name in splits.SPLITS}
    assert sum(counts.values()) == 400
    assert 160 <= counts["train"] <= 240 and 60 <= counts["dev"] <= 140 and 60 <= counts["test"] <= 140


def test_not_fooled_examples_always_go_to_train(mixed_round, open_round):
    splits.assign_splits(open_round)
    assert {Example.objects.get(pk=e.pk).split for e in mixed_round["not_fooled"]} == {"train"}


def test_unverified_fooling_with_a_dev_or_test_hash_waits_for_validation(mixed_round, open_round):
    rule = SplitRule.of(open_round.task)
    splits.assign_splits(open_round)
    for example in mixed_round["unverified"]:
        stored = Example.objects.get(pk=example.pk).split
        assert stored == ("train" if rule.bucket(example.pk) == "train" else None)
    assert splits.held_back(open_round) == sum(rule.bucket(e.pk) != "train" for e in mixed_round["unverified"])


def test_rejected_flagged_and_retracted_examples_are_not_in_any_split(mixed_round, open_round):
    splits.assign_splits(open_round)
    in_files = {pk for name in splits.SPLITS for pk in splits.in_split(open_round, name).values_list("id", flat=True)}
    for group in ("rejected", "flagged", "retracted"):
        assert not {e.pk for e in mixed_round[group]} & in_files
    assert set(splits.excluded(open_round).values_list("id", flat=True)) == {
        e.pk for e in mixed_round["rejected"] + mixed_round["flagged"]
    }


def test_a_stored_split_never_moves_when_the_owner_changes_ratios(mixed_round, open_round):
    splits.assign_splits(open_round)
    before = stored_splits(open_round)
    task = open_round.task
    task.config = {**task.config, "splits": {"train": 0.0, "dev": 0.0, "test": 1.0, "seed": 99}}
    task.save()
    open_round.task.refresh_from_db()
    splits.assign_splits(open_round)
    after = stored_splits(open_round)
    assert all(after[pk] == split for pk, split in before.items() if split)
