"""The dataset export owns the splits: retraining learns exactly the exported train split, evaluation scores
exactly the exported test split, and an example trained on never shows up in a dev or test file, whatever
the order in which validation, split assignment, training and export happen."""

from __future__ import annotations

import itertools
import json

import pytest

from annotation.models import Example
from exports import services as exports
from exports import splits
from rounds import datasets
from tasks import roles
from tests.factories import ExampleFactory, RoundFactory, TaskFactory, UserFactory
from validation.services import submit_vote

EVENTS = ("validate", "assign", "train", "export")


@pytest.fixture
def collected(db):
    """A round with fooled examples awaiting validation (some hash to dev/test), not fooled ones, a rejected
    one and one its writer flagged; an even split of the ratios so every split gets examples."""
    task = TaskFactory(slug="leak", config={"splits": {"train": 0.4, "dev": 0.3, "test": 0.3, "seed": 3}})
    round_ = RoundFactory(task=task, number=1)
    writer = UserFactory(username="writer")
    make = lambda n, **kw: ExampleFactory(round=round_, context=None, author=writer,  # noqa: E731
                                          input={"text": f"example {n}"}, **kw)
    examples = [make(n) for n in range(30)]  # fooled, unvalidated
    examples += [make(100 + n, fooled=False) for n in range(5)]
    examples += [make(200, consensus=Example.Consensus.REJECTED), make(201, flagged=True, consensus="verified")]
    return round_, examples


def validate_all(round_) -> None:
    """An expert confirms every example still waiting (an override settles it at once)."""
    expert = UserFactory(username="expert")
    roles.grant(expert, roles.EXPERT, roles.VALIDATOR)
    for example in Example.objects.filter(round=round_, consensus=Example.Consensus.UNVALIDATED):
        submit_vote(expert, example, "correct")


def exported_ids(round_, split: str) -> set[int]:
    body = b"".join(exports.live_file(round_, split, "jsonl").chunks)
    return {json.loads(line)["example_id"] for line in body.splitlines()}


def trained_ids(round_) -> set[int]:
    by_text = dict(Example.objects.filter(round=round_).values_list("input__text", "id"))
    return {by_text[i["text"]] for i in datasets.training_set(round_.task).inputs}


@pytest.mark.parametrize("order", list(itertools.permutations(EVENTS)), ids="-".join)
def test_an_example_trained_on_never_appears_in_a_dev_or_test_export(collected, order):
    round_, _ = collected
    trained: set[int] = set()
    held_out: set[int] = set()

    def act(event: str) -> None:
        if event == "validate":
            validate_all(round_)
        elif event == "assign":
            splits.assign_splits(round_)  # the pipeline's assign step
        elif event == "train":
            trained.update(trained_ids(round_))
        else:
            held_out.update(exported_ids(round_, "dev") | exported_ids(round_, "test"))

    for event in order:
        act(event)
    for event in ("train", "export"):  # and once more after everything has happened
        act(event)
    assert held_out and trained, "the scenario puts examples on both sides"
    assert not trained & held_out
    assert not trained & set(Example.objects.filter(round=round_, split__in=["dev", "test"]).values_list("id", flat=True))


def test_retraining_learns_exactly_the_exported_train_split(collected):
    round_, examples = collected
    flagged_by_writer = examples[-1]
    assert trained_ids(round_) == exported_ids(round_, "train")
    assert flagged_by_writer.pk not in trained_ids(round_)  # neither exported nor trained on
    validate_all(round_)
    assert trained_ids(round_) == exported_ids(round_, "train")


def test_the_round_test_set_is_the_exported_test_split_with_its_labels(collected):
    round_, _ = collected
    validate_all(round_)
    splits.assign_splits(round_)  # the pipeline's assign step, before it evaluates
    assert "round-1/test" in datasets.test_sets(round_.task)
    test_set = datasets.load(round_.task, "round-1/test")
    body = b"".join(exports.live_file(round_, "test", "jsonl").chunks)
    exported = sorted((r["input"]["text"], r["label"]) for r in map(json.loads, body.splitlines()))
    assert exported and sorted(zip([i["text"] for i in test_set.inputs], test_set.targets, strict=True)) == exported


def test_a_round_without_stored_test_examples_has_no_test_set(db):
    task = TaskFactory(slug="empty")
    ExampleFactory(round=RoundFactory(task=task, number=1), fooled=False)  # goes to train, never to test
    assert datasets.test_sets(task) == []
