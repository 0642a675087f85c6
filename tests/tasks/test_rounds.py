import pytest
from django.db import IntegrityError, transaction

from dynabench_site.errors import Conflict
from tasks import round_state
from tasks.models import Round
from tasks.services import open_next_round
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
def test_a_round_goes_from_draft_to_open_to_closed_with_its_dates():
    task = TaskFactory()
    round_ = round_state.draft_round(task, description="first")
    assert (round_.number, round_.status, round_.opened_at) == (1, "draft", None)
    round_state.open_draft(round_)
    assert round_.status == "open" and round_.opened_at is not None
    round_state.close_round(round_)
    round_.refresh_from_db()
    assert round_.status == "closed" and round_.closed_at >= round_.opened_at


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "move", "message"),
    [
        ("draft", round_state.close_round, "round 1 is draft; it cannot become closed"),
        ("open", round_state.open_draft, "round 1 is open; it cannot become open"),
        ("closed", round_state.open_draft, "round 1 is closed; it cannot become open"),
        ("closed", round_state.close_round, "round 1 is closed; it cannot become closed"),
    ],
)
def test_any_other_round_transition_is_refused_as_a_conflict(status, move, message):
    round_ = RoundFactory(task=TaskFactory(), number=1, status=status)
    with pytest.raises(Conflict, match=message):
        move(round_)
    round_.refresh_from_db()
    assert round_.status == status


@pytest.mark.django_db
def test_a_draft_cannot_open_while_another_round_of_the_task_is_open():
    task = TaskFactory()
    RoundFactory(task=task, number=1, status=Round.Status.OPEN)
    draft = round_state.draft_round(task)
    with pytest.raises(Conflict, match="round 1 of this task is open; close it before opening round 2"):
        round_state.open_draft(draft)
    assert Round.objects.get(pk=draft.pk).status == "draft"


@pytest.mark.django_db
def test_a_draft_round_is_created_once():
    task = TaskFactory()
    assert round_state.draft_round(task, 3) == round_state.draft_round(task, 3)
    assert round_state.draft_round(task).number == 4
