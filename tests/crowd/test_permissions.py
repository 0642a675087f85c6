"""Allow/deny matrix over the shared personas for every crowd page."""

from __future__ import annotations

import pytest
from django.test import Client

from crowd import links, quizzes
from tests.factories import ExampleFactory, LabeledItemFactory
from tests.personas import PERSONAS

pytestmark = pytest.mark.django_db
OWNERS = {"owner", "admin"}


def page_client(personas, persona: str) -> Client:
    client = Client()
    if (user := personas.get(persona)) is not None:
        client.force_login(user)
    return client


def owner_only(persona: str, allowed_status: int = 200) -> int:
    if persona in OWNERS:
        return allowed_status
    return 302 if persona == "anonymous" else 403


@pytest.fixture
def batch(task, personas):
    return links.create_batch(task, personas.owner, name="b", source="prolific", hours=2, examples_required=1,
                              workers="W1,A1")


OWNER_PAGES = ["console/crowd/", "console/crowd/people/", "console/crowd/gold/", "console/crowd/quiz/validator/",
               "console/crowd/quiz/annotator/", "console/crowd/batches/new/", "console/guidelines/"]


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("page", OWNER_PAGES)
def test_owner_pages_matrix(personas, task, open_round, persona, page):
    response = page_client(personas, persona).get(f"/tasks/{task.slug}/{page}")
    assert response.status_code == owner_only(persona), (persona, page)


@pytest.mark.parametrize("persona", PERSONAS)
def test_appointing_matrix(personas, task, persona):
    response = page_client(personas, persona).post(f"/tasks/{task.slug}/console/crowd/members/",
                                                   {"username": "outsider", "role": "expert", "action": "appoint"})
    assert response.status_code == owner_only(persona, 302)
    assert personas.outsider.task_memberships.filter(task=task).exists() is (persona in OWNERS)


@pytest.mark.parametrize("persona", PERSONAS)
def test_suspending_matrix(personas, task, persona):
    response = page_client(personas, persona).post(f"/tasks/{task.slug}/console/crowd/suspend/",
                                                   {"username": "outsider", "reason": "test", "action": "suspend"})
    assert response.status_code == owner_only(persona, 302)
    assert personas.outsider.suspensions.exists() is (persona in OWNERS)


@pytest.mark.parametrize("persona", PERSONAS)
def test_gold_marking_matrix(personas, task, open_round, persona):
    example = ExampleFactory(round=open_round, consensus="verified")
    response = page_client(personas, persona).post(f"/tasks/{task.slug}/console/crowd/gold/mark/",
                                                   {"example": example.pk, "action": "mark"})
    assert response.status_code == owner_only(persona, 302)
    assert hasattr(example.__class__.objects.get(pk=example.pk), "gold") is (persona in OWNERS)


@pytest.mark.parametrize("persona", PERSONAS)
def test_quiz_editing_matrix(personas, task, persona):
    item = LabeledItemFactory(task=task)
    client = page_client(personas, persona)
    added = client.post(f"/tasks/{task.slug}/console/crowd/quiz/annotator/add/", {"labelled": [item.pk]})
    assert added.status_code == owner_only(persona, 302)
    quiz = quizzes.quiz_for(task, "annotator", active_only=False)
    assert (quiz is not None and quiz.items.count() == 1) is (persona in OWNERS)
    if quiz is not None:
        first = quiz.items.get()
        removed = client.post(f"/tasks/{task.slug}/console/crowd/quiz/annotator/items/{first.pk}/delete/")
        assert removed.status_code == owner_only(persona, 302)


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("page", ["", "links.csv", "pay/", "pay.csv"])
def test_batch_pages_matrix(personas, batch, persona, page):
    response = page_client(personas, persona).get(f"/console/batches/{batch.pk}/{page}")
    assert response.status_code == owner_only(persona), (persona, page)


@pytest.mark.parametrize("persona", PERSONAS)
def test_closing_a_batch_matrix(personas, batch, persona):
    response = page_client(personas, persona).post(f"/console/batches/{batch.pk}/close/")
    assert response.status_code == owner_only(persona, 302)
    batch.refresh_from_db()
    assert batch.closed is (persona in OWNERS)


@pytest.mark.parametrize("persona", PERSONAS)
def test_taking_a_quiz_needs_an_account(personas, task, persona):
    quiz = quizzes.ensure_quiz(task, "validator")
    quizzes.add_item(quiz, context={}, input={"text": "fine"}, proposed="positive", answer="correct")
    response = page_client(personas, persona).get(f"/tasks/{task.slug}/quiz/validator/")
    assert response.status_code == (302 if persona == "anonymous" else 200)


@pytest.mark.parametrize("persona", PERSONAS)
def test_a_link_landing_page_is_open_to_anyone(personas, batch, persona):
    url = links.link_path(batch.assignments.get())
    assert page_client(personas, persona).get(url).status_code == 200


@pytest.mark.parametrize("persona", PERSONAS)
def test_an_assignment_is_seen_only_by_its_worker(personas, batch, persona):
    Client().post(links.link_path(batch.assignments.get()))
    assignment = batch.assignments.get()
    response = page_client(personas, persona).get(f"/assignments/{assignment.pk}/")
    assert response.status_code == (302 if persona == "anonymous" else 404)
    worker = Client()
    worker.force_login(assignment.user)
    assert worker.get(f"/assignments/{assignment.pk}/").status_code == 200
    assert worker.post(f"/assignments/{assignment.pk}/finish/").status_code == 302


@pytest.mark.parametrize("persona", PERSONAS)
def test_profiles_are_public(personas, persona):
    assert page_client(personas, persona).get("/people/annotator/").status_code == 200


@pytest.mark.parametrize("persona", PERSONAS)
def test_a_hidden_tasks_crowd_console_is_not_found(personas, task, persona):
    task.visibility = "hidden"
    task.save()
    response = page_client(personas, persona).get(f"/tasks/{task.slug}/console/crowd/")
    assert response.status_code == (200 if persona in OWNERS else 302 if persona == "anonymous" else 404)
