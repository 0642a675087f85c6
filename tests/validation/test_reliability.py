"""Reliability-weighted labels (Dawid-Skene) next to plain majority, and both in the exported dataset."""

from __future__ import annotations

import pytest

from exports.records import record_batches
from tests.factories import ExampleFactory, UserFactory, ValidationFactory
from validation import gold, reliability
from validation.models import ReliabilityLabel

WRONG = 'incorrect:"negative"'


def spammers_and_an_expert(n: int = 40, gold: int = 8):
    """Two validators always say "correct"; one careful validator says the truth (half the items are wrong).
    `gold` more items have a known outcome, answered the same way."""
    votes, truth, known = [], {}, {}
    for item in range(n + gold):
        outcome = "correct" if item % 2 == 0 else WRONG
        (known if item >= n else truth)[item] = outcome
        votes += [(item, 1, "correct"), (item, 2, "correct"), (item, 3, outcome)]
    return votes, truth, known


def test_reliability_weighting_anchored_on_gold_beats_a_majority_of_careless_validators():
    votes, truth, known = spammers_and_an_expert()
    estimate = reliability.dawid_skene(votes, known)
    majority_right = sum(truth[i] == "correct" for i in truth)
    weighted_right = sum(estimate.outcomes[i][0] == truth[i] for i in truth)
    assert majority_right == 20  # the plain majority gets every wrong label wrong
    assert weighted_right == 40
    assert estimate.accuracy[3] > 0.9 and estimate.accuracy[1] == estimate.accuracy[2] == 0.5


def test_without_gold_two_validators_who_always_agree_look_reliable():
    """Why gold anchors the estimate: from the votes alone, constant agreement looks like competence."""
    votes, truth, _ = spammers_and_an_expert(gold=0)
    estimate = reliability.dawid_skene(votes)
    assert sum(estimate.outcomes[i][0] == truth[i] for i in truth) == 20


def test_agreeing_careful_validators_give_the_same_answer_as_the_majority():
    votes = [(i, w, "correct") for i in range(5) for w in (1, 2, 3)]
    assert {outcome for outcome, _ in reliability.dawid_skene(votes).outcomes.values()} == {"correct"}
    assert reliability.dawid_skene([]).outcomes == {}


@pytest.mark.django_db
def test_the_export_carries_both_labels(open_round, task):
    careless = [UserFactory(username=f"careless{n}") for n in range(2)]
    careful = UserFactory(username="careful")

    def answer(user, example, right_verdict):
        verdict = "correct" if user in careless else right_verdict
        return {"verdict": verdict, "label": "negative" if verdict == "incorrect" else None}

    for n in range(6):  # gold items the owner vouched for; every validator answered them
        decided = "verified" if n % 2 == 0 else "rejected"
        example = ExampleFactory(round=open_round, input={"text": f"g{n}"}, consensus=decided, validated_label="negative")
        item = gold.mark(example)
        for user in (*careless, careful):
            given = answer(user, example, item.verdict)
            gold.record_answer(user, item, given["verdict"], given["label"])
    examples = []
    for n in range(12):
        example = ExampleFactory(round=open_round, target="positive", input={"text": f"e{n}"},
                                 consensus="verified", validated_label="positive")  # what the majority decided
        for user in (*careless, careful):
            ValidationFactory(example=example, validator=user, **answer(user, example, "correct" if n % 2 == 0 else "incorrect"))
        examples.append(example)
    reliability.refresh(task)
    assert ReliabilityLabel.objects.count() == 18
    records = [r for batch in record_batches(task, open_round.examples.all()) for r in batch]
    odd = next(r for r in records if r["example_id"] == examples[1].pk)
    assert odd["validated_label"] == "positive" and odd["consensus"] == "verified"
    assert odd["reliability_outcome"] == "incorrect" and odd["reliability_label"] == "negative"
    assert 0.5 < odd["reliability"] <= 1
    even = next(r for r in records if r["example_id"] == examples[0].pk)
    assert even["reliability_outcome"] == "correct" and even["reliability_label"] == "positive"


@pytest.mark.django_db
def test_labels_are_redone_only_when_the_votes_change(open_round, task):
    example = ExampleFactory(round=open_round)
    ValidationFactory(example=example, verdict="correct")
    first = reliability.refresh(task)
    assert reliability.refresh(task).computed_at == first.computed_at
    ValidationFactory(example=example, verdict="flagged", reason="spam")
    assert reliability.refresh(task).computed_at > first.computed_at
