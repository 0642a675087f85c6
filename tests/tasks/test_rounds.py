import pytest
from django.db import IntegrityError, transaction

from tasks.models import Round
from tasks.services import close_round, open_next_round
from tests.factories import RoundFactory, TaskFactory


@pytest.mark.django_db
def test_database_refuses_a_second_open_round():
    task = TaskFactory()
    RoundFactory(task=task, number=1, status=Round.Status.OPEN)
    with pytest.raises(IntegrityError), transaction.atomic():
        Round.objects.create(task=task, number=2, status=Round.Status.OPEN)
    # also when an existing round is switched to open with a plain update
    RoundFactory(task=task, number=3, status=Round.Status.DRAFT)
    with pytest.raises(IntegrityError), transaction.atomic():
        Round.objects.filter(task=task, number=3).update(status=Round.Status.OPEN)


@pytest.mark.django_db
def test_other_tasks_may_each_have_an_open_round():
    RoundFactory(task=TaskFactory(), number=1)
    RoundFactory(task=TaskFactory(), number=1)
    assert Round.objects.filter(status="open").count() == 2


@pytest.mark.django_db
def test_opening_the_next_round_closes_the_current_one():
    task = TaskFactory()
    first = open_next_round(task)
    second = open_next_round(task, description="harder")
    first.refresh_from_db()
    assert (first.number, first.status) == (1, "closed")
    assert first.closed_at is not None
    assert (second.number, second.status, second.description) == (2, "open", "harder")
    assert task.current_round == second


@pytest.mark.django_db
def test_round_numbers_are_unique_per_task():
    task = TaskFactory()
    RoundFactory(task=task, number=1, status=Round.Status.CLOSED)
    with pytest.raises(IntegrityError), transaction.atomic():
        RoundFactory(task=task, number=1, status=Round.Status.CLOSED)


@pytest.mark.django_db
def test_closing_a_round_that_is_not_open_is_refused():
    task = TaskFactory()
    round_ = RoundFactory(task=task, number=1, status=Round.Status.CLOSED)
    with pytest.raises(Exception, match="not open"):
        close_round(round_)
