"""Many validators claiming and voting at once (PostgreSQL: row locks, SKIP LOCKED, one connection per thread)."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.db import connection

from tests.factories import ExampleFactory, RoundFactory, TaskFactory, UserFactory
from tests.validation.conftest import set_validation
from validation import queue, services
from validation.models import Validation

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

QUORUM = 3


def run_threads(workers: list, target) -> list[BaseException]:
    failures: list[BaseException] = []
    barrier = threading.Barrier(len(workers))

    def wrapped(arg) -> None:
        try:
            barrier.wait()
            target(arg)
        except BaseException as exc:  # surface any crash (e.g. an IntegrityError) to the test
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=wrapped, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return failures


def test_concurrent_validators_never_self_validate_double_vote_or_pass_the_quorum(make_validator):
    task = TaskFactory(slug="race", kind="sentiment")
    set_validation(task, quorum=QUORUM)
    rnd = RoundFactory(task=task)
    validators = [make_validator(f"racer{i}") for i in range(8)]
    writers = [*validators, UserFactory(username="outside-writer")]
    examples = [ExampleFactory(round=rnd, author=writers[i % len(writers)]) for i in range(27)]
    refused: Counter[str] = Counter()

    def work(user) -> None:
        idle = 0
        while idle < 20:
            claim = queue.claim_next(task, user)
            if claim.example is None:
                if claim.reason != queue.ALL_LEASED:
                    return
                idle += 1
                time.sleep(0.05)
                continue
            try:
                services.submit_vote(user, claim.example, "correct")
            except services.VoteError as exc:
                refused[exc.code] += 1

    assert run_threads(validators, work) == []
    votes = list(Validation.objects.values_list("example_id", "validator_id", "example__author_id"))
    assert all(validator != author for _, validator, author in votes), "someone validated their own example"
    pairs = Counter((example, validator) for example, validator, _ in votes)
    assert max(pairs.values()) == 1, "someone voted twice on one example"
    per_example = Counter(example for example, _, _ in votes)
    assert {per_example[e.pk] for e in examples} == {QUORUM}, "an example got more (or fewer) votes than its quorum"
    for example in examples:
        example.refresh_from_db()
        assert example.consensus == "verified"
    assert refused["already_validated"] == 0


def test_a_last_vote_race_lets_exactly_one_vote_through(make_validator):
    task = TaskFactory(slug="last-vote", kind="sentiment")
    set_validation(task, quorum=2)
    example = ExampleFactory(round=RoundFactory(task=task))
    services.submit_vote(make_validator("first"), example, "correct")
    racers = [make_validator(f"last{i}") for i in range(6)]
    outcomes: list[str] = []

    def vote(user) -> None:
        try:
            services.submit_vote(user, example, "correct")
            outcomes.append("ok")
        except services.VoteError as exc:
            outcomes.append(exc.code)

    assert run_threads(racers, vote) == []
    assert outcomes.count("ok") == 1
    assert set(outcomes) - {"ok"} <= {"decided", "reserved"}
    assert Validation.objects.filter(example=example).count() == 2


def test_concurrent_claims_of_an_item_needing_one_vote_lease_it_once(make_validator):
    task = TaskFactory(slug="one-slot", kind="sentiment")
    set_validation(task, quorum=1)
    example = ExampleFactory(round=RoundFactory(task=task))
    claimers = [make_validator(f"claimer{i}") for i in range(6)]
    got: list[int | None] = []

    def claim(user) -> None:
        got.append(getattr(queue.claim_next(task, user).example, "pk", None))

    assert run_threads(claimers, claim) == []
    assert got.count(example.pk) == 1


def test_a_claim_commits_its_lease_without_waiting_for_the_disk(make_validator):
    """The lease's transaction runs with synchronous_commit off (set in the claim's own statement), and only it:
    the next transaction is back to the server's default."""
    from django.db import transaction
    from django.utils import timezone

    task = TaskFactory(slug="relaxed", kind="sentiment")
    example = ExampleFactory(round=RoundFactory(task=task))
    validator = make_validator("relaxed-judge")
    rule = task.typed_config.validation
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        default = cursor.fetchone()[0]
    with transaction.atomic():  # the claim's own atomic block becomes a savepoint: its SET LOCAL shows here
        assert queue.try_claim(example.pk, validator, rule, timezone.now()) is not None
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone()[0] == "off"
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == default
