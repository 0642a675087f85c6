"""Queue policy: who gets which example next, leases, and why the queue is empty."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from annotation.models import Example
from annotation.signals import verdict_stored
from tasks.models import Round
from tests.factories import ExampleFactory, ValidationFactory
from tests.validation.conftest import set_validation
from validation import queue, services
from validation.models import Lease, QueueItem


def claim(task, user, **kw):
    return queue.claim_next(task, user, **kw)


def test_validator_never_gets_their_own_example(task, open_round, make_validator):
    alice = make_validator("alice")
    ExampleFactory(round=open_round, author=alice)
    result = claim(task, alice)
    assert result.example is None and result.reason == queue.ONLY_OWN


def test_validator_never_gets_an_example_they_already_validated(task, open_round, make_validator):
    alice = make_validator("alice")
    example = ExampleFactory(round=open_round)
    services.submit_vote(alice, example, "correct")
    result = claim(task, alice)
    assert result.example is None and result.reason == queue.ALREADY_VOTED


def test_retracted_examples_are_never_handed_out_even_when_retracted_by_update(task, open_round, make_validator):
    alice = make_validator("alice")
    retracted = ExampleFactory(round=open_round)
    Example.objects.filter(pk=retracted.pk).update(retracted=True)  # as the writer's retract service does
    kept = ExampleFactory(round=open_round)
    assert claim(task, alice).example == kept
    assert QueueItem.objects.get(pk=retracted.pk).open is False  # the stale row was repaired on the way


def test_default_scope_is_fooling_examples_only(task, open_round, make_validator):
    ExampleFactory(round=open_round, fooled=False)
    result = claim(task, make_validator("alice"))
    assert result.example is None and result.reason == queue.NOTHING_WRITTEN


def test_scope_all_includes_examples_that_did_not_fool_the_model_after_fooling_ones(task, open_round, make_validator):
    set_validation(task, scope="all")
    plain = ExampleFactory(round=open_round, fooled=False)
    fooling = ExampleFactory(round=open_round, fooled=True)
    alice, bob = make_validator("alice"), make_validator("bob")
    assert claim(task, alice).example == fooling
    assert claim(task, bob).example in (fooling, plain)
    services.submit_vote(alice, fooling, "correct")
    assert claim(task, alice).example == plain


def test_order_is_fooling_first_then_fewest_votes_then_oldest(task, open_round, make_validator):
    set_validation(task, scope="all")
    old_voted = ExampleFactory(round=open_round)
    ValidationFactory(example=old_voted)
    queue.sync_examples([old_voted.pk])
    not_fooling = ExampleFactory(round=open_round, fooled=False)
    newer = ExampleFactory(round=open_round)
    newest = ExampleFactory(round=open_round)
    seen = []
    for name in ("v1", "v2", "v3", "v4"):
        user = make_validator(name)
        item = claim(task, user).example
        seen.append(item)
        services.submit_vote(user, item, "flagged", reason="checking order")
    assert seen[:3] == [newer, newest, old_voted]
    assert not_fooling not in seen[:3]


def test_fewest_votes_first_spreads_votes_evenly(task, open_round, make_validator):
    examples = [ExampleFactory(round=open_round) for _ in range(3)]
    for i in range(3):
        user = make_validator(f"v{i}")
        services.submit_vote(user, claim(task, user).example, "correct")
    assert sorted(QueueItem.objects.filter(pk__in=[e.pk for e in examples]).values_list("votes", flat=True)) == [1, 1, 1]


def test_an_item_needing_one_more_vote_is_leased_to_one_validator_only(task, open_round, make_validator):
    example = ExampleFactory(round=open_round)
    for name in ("v1", "v2"):
        services.submit_vote(make_validator(name), example, "correct")
    first, second = make_validator("v3"), make_validator("v4")
    assert claim(task, first).example == example
    result = claim(task, second)
    assert result.example is None and result.reason == queue.ALL_LEASED


def test_an_item_needing_three_votes_is_leased_to_three_validators(task, open_round, make_validator):
    example = ExampleFactory(round=open_round)
    holders = [claim(task, make_validator(f"v{i}")).example for i in range(3)]
    assert holders == [example] * 3
    assert claim(task, make_validator("late")).reason == queue.ALL_LEASED


def test_leases_expire(task, open_round, make_validator):
    set_validation(task, quorum=1)
    example = ExampleFactory(round=open_round)
    first, second = make_validator("v1"), make_validator("v2")
    claim(task, first)
    assert claim(task, second).example is None
    later = timezone.now() + timedelta(seconds=task.typed_config.validation.lease_seconds + 1)
    assert claim(task, second, now=later).example == example


def test_asking_again_returns_the_item_already_held(task, open_round, make_validator):
    ExampleFactory(round=open_round)
    ExampleFactory(round=open_round)
    alice = make_validator("alice")
    assert claim(task, alice).example == claim(task, alice).example
    assert Lease.objects.filter(validator=alice).count() == 1


def test_a_vote_releases_the_lease(task, open_round, make_validator):
    example = ExampleFactory(round=open_round)
    alice = make_validator("alice")
    claim(task, alice)
    services.submit_vote(alice, example, "correct")
    assert not Lease.objects.filter(validator=alice).exists()


def test_purge_removes_expired_leases_only(task, open_round, make_validator):
    example = ExampleFactory(round=open_round)
    Lease.objects.create(example=example, validator=make_validator("a"), expires_at=timezone.now() - timedelta(1))
    Lease.objects.create(example=example, validator=make_validator("b"), expires_at=timezone.now() + timedelta(1))
    assert queue.purge_expired() == 1


def test_empty_task_says_nothing_written(task, make_validator):
    assert claim(task, make_validator("alice")).reason == queue.NOTHING_WRITTEN


def test_everything_decided_says_all_validated(task, open_round, make_validator, personas):
    example = ExampleFactory(round=open_round)
    services.submit_vote(personas.expert, example, "correct")
    result = claim(task, make_validator("alice"))
    assert result.reason == queue.ALL_VALIDATED and "validated" in result.detail


def test_closed_round_is_validated_by_default(task, open_round, make_validator):
    example = ExampleFactory(round=open_round)
    Round.objects.filter(pk=open_round.pk).update(status=Round.Status.CLOSED)
    assert claim(task, make_validator("alice")).example == example


def test_closed_round_says_so_when_the_task_stops_validating_after_close(task, open_round, make_validator):
    set_validation(task, continue_after_close=False)
    ExampleFactory(round=open_round)
    Round.objects.filter(pk=open_round.pk).update(status=Round.Status.CLOSED)
    assert claim(task, make_validator("alice")).reason == queue.ROUND_CLOSED


def test_example_scored_after_creation_enters_the_queue(task, open_round, make_validator):
    pending = ExampleFactory(round=open_round, scoring_state=Example.Scoring.PENDING, fooled=None)
    alice = make_validator("alice")
    assert claim(task, alice).example is None
    # what annotation.scoring does when it stores a verdict: a queryset update, and its announcement
    Example.objects.filter(pk=pending.pk).update(scoring_state=Example.Scoring.SCORED, fooled=True)
    verdict_stored.send(sender=Example, example_id=pending.pk, fooled=True)
    assert claim(task, alice).example == pending


def test_a_verdict_whose_announcement_was_lost_enters_the_queue_at_the_next_refresh(task, open_round,
                                                                                   make_validator):
    pending = ExampleFactory(round=open_round, scoring_state=Example.Scoring.PENDING, fooled=None)
    alice = make_validator("alice")
    assert claim(task, alice).example is None
    Example.objects.filter(pk=pending.pk).update(scoring_state=Example.Scoring.SCORED, fooled=True)  # no signal
    assert claim(task, alice).example is None  # the safety net ran less than REFRESH_EVERY_S ago
    cache.delete(f"queue:refresh-unscored:{task.pk}")  # REFRESH_EVERY_S later
    assert claim(task, alice).example == pending


def test_every_new_example_gets_a_queue_row(open_round):
    example = ExampleFactory(round=open_round)
    item = QueueItem.objects.get(pk=example.pk)
    assert (item.open, item.fooled, item.votes, item.needed) == (True, True, 0, 3)


def test_sync_queue_repairs_missing_and_stale_rows(task, open_round):
    example = ExampleFactory(round=open_round)
    QueueItem.objects.all().delete()
    assert queue.sync_queue(task) == 1
    assert QueueItem.objects.get(pk=example.pk).open


def test_a_vote_on_an_example_without_its_queue_row_counts_and_gives_it_one(task, open_round, make_validator):
    set_validation(task, quorum=2)
    example = ExampleFactory(round=open_round)
    QueueItem.objects.filter(pk=example.pk).delete()  # written before the queue kept rows
    services.submit_vote(make_validator("first"), example, "correct")
    item = QueueItem.objects.get(pk=example.pk)
    assert (item.open, item.votes, item.needed) == (True, 1, 1)


@pytest.mark.parametrize("quorum", [1, 2])
def test_decided_example_leaves_the_queue(task, open_round, make_validator, quorum):
    set_validation(task, quorum=quorum)
    example = ExampleFactory(round=open_round)
    for i in range(quorum):
        services.submit_vote(make_validator(f"v{i}"), example, "correct")
    assert QueueItem.objects.get(pk=example.pk).open is False
    assert claim(task, make_validator("late")).reason == queue.ALL_VALIDATED
