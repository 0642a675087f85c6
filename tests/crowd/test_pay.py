"""The pay report of a batch matches a hand count: examples, verified fooling examples and validations in
each assignment's window, and the bonus the task's rates give."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Example
from crowd import links, pay
from crowd.models import Assignment
from tests.crowd.conftest import set_crowd
from tests.factories import ExampleFactory, UserFactory, ValidationFactory
from validation import gold
from validation.models import GoldAnswer, Validation

pytestmark = pytest.mark.django_db


@pytest.fixture
def fixture(crowd_task):
    """Two workers: ana writes, ben validates; a third never starts. Rates: 0.10 / 0.75 / 0.05 EUR."""
    set_crowd(crowd_task, pay={"currency": "EUR", "per_example": 0.10, "per_verified_fooling": 0.75,
                               "per_validation": 0.05})
    owner = UserFactory(username="payer")
    crowd_task.owners.add(owner)
    batch = links.create_batch(crowd_task, owner, name="wave 1", source="prolific", hours=48, examples_required=1,
                               workers="ANA,A1\nBEN,B1\nCARL,C1")
    for worker in ("ANA", "BEN"):
        Client().post(links.link_path(batch.assignments.get(worker_id=worker)))
    ana = Assignment.objects.get(worker_id="ANA").user
    ben = Assignment.objects.get(worker_id="BEN").user
    rnd = crowd_task.rounds.get()
    before = Assignment.objects.get(worker_id="ANA").followed_at - timedelta(hours=1)

    def example(**kw):
        return ExampleFactory(round=rnd, author=ana, input={"text": f"ana {Example.objects.count()}"}, **kw)

    example(fooled=True, consensus="verified")  # counts: example + verified fooling
    example(fooled=True, consensus="verified")  # counts: example + verified fooling
    example(fooled=True, consensus="rejected")  # counts: example
    example(fooled=False, consensus="verified")  # counts: example (did not fool)
    example(fooled=True, consensus="verified", retracted=True)  # retracted: nothing
    Example.objects.filter(pk=example(fooled=True, consensus="verified").pk).update(created_at=before)  # before: nothing
    others = [ExampleFactory(round=rnd, input={"text": f"other {n}"}) for n in range(4)]
    for target in others[:3]:
        ValidationFactory(example=target, validator=ben)  # three counted votes
    ValidationFactory(example=others[3], validator=ben, counted=False, excluded_reason="gold_accuracy")  # not paid
    decided = ExampleFactory(round=rnd, consensus="verified", input={"text": "gold"})
    GoldAnswer.objects.create(gold=gold.mark(decided), task=crowd_task, validator=ben, verdict="correct", correct=True)
    return batch


def test_the_bonus_report_matches_a_hand_count(fixture):
    rows = {r.assignment.worker_id: r for r in pay.report(fixture)}
    ana, ben, carl = rows["ANA"], rows["BEN"], rows["CARL"]
    # ana: 4 examples x 0.10 + 2 verified fooling x 0.75 = 0.40 + 1.50
    assert (ana.examples, ana.verified_fooling, ana.validations, ana.bonus) == (4, 2, 0, Decimal("1.90"))
    # ben: 3 counted votes + 1 gold answer = 4 validations x 0.05; the withdrawn vote is not paid
    assert (ben.examples, ben.validations, ben.excluded_votes, ben.bonus) == (0, 4, 1, Decimal("0.20"))
    assert (carl.examples, carl.bonus) == (0, Decimal("0.00"))
    assert pay.total(list(rows.values())) == Decimal("2.10")


def test_the_report_is_a_page_and_a_csv_for_the_owner(fixture):
    owner = Client()
    owner.force_login(fixture.task.owners.get())
    page = owner.get(f"/console/batches/{fixture.pk}/pay/")
    assert page.status_code == 200 and b"2.10 EUR" in page.content
    csv_lines = owner.get(f"/console/batches/{fixture.pk}/pay.csv").content.decode().splitlines()
    assert csv_lines[0].split(",") == pay.COLUMNS
    ana = next(line for line in csv_lines if line.startswith("ANA,"))
    assert ",4,2,0,0,1.90,EUR," in ana


def test_work_after_completion_is_not_in_the_assignment(fixture):
    ana = Assignment.objects.get(worker_id="ANA")
    Assignment.objects.filter(pk=ana.pk).update(completed_at=timezone.now())
    ExampleFactory(round=fixture.task.rounds.get(), author=ana.user, input={"text": "later"}, fooled=True,
                   consensus="verified")
    row = next(r for r in pay.report(fixture) if r.assignment.worker_id == "ANA")
    assert (row.examples, row.bonus) == (4, Decimal("1.90"))
    assert Validation.objects.count() == 4
