"""Who may do what in the create flow, as an allow/deny matrix over the shared personas."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tasks.models import Task
from tests.annotation.conftest import make_task, sentiment_body
from tests.factories import ExampleFactory
from tests.personas import PERSONAS, make_personas

pytestmark = pytest.mark.django_db

WRITERS = {"annotator"}
DENIED = {401, 403}  # anonymous: 401 (token auth asks for credentials); signed in without the role: 403


@pytest.fixture
def world(db):
    task, round, context = make_task("sentiment")
    return task, round, context, make_personas(task)


def client_as(people, name: str) -> APIClient:
    client = APIClient()
    if (user := people.get(name)) is not None:
        client.force_authenticate(user)
    return client


@pytest.mark.parametrize("persona", PERSONAS)
def test_only_annotators_may_submit(world, persona):
    task, _, context, people = world
    response = client_as(people, persona).post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    expected = {202, 201} if persona in WRITERS else DENIED
    assert response.status_code in expected, (persona, response.content)


@pytest.mark.parametrize("persona", PERSONAS)
def test_only_annotators_may_draw_contexts(world, persona):
    task, _, _, people = world
    response = client_as(people, persona).post(f"/api/tasks/{task.slug}/contexts/next/")
    assert response.status_code in ({200} if persona in WRITERS else DENIED), persona


@pytest.mark.parametrize("persona", PERSONAS)
def test_only_annotators_may_use_the_sandbox_and_inspiration(world, persona):
    task, _, context, people = world
    client = client_as(people, persona)
    inspiration = client.get(f"/api/tasks/{task.slug}/inspiration/")
    assert inspiration.status_code in ({200} if persona in WRITERS else DENIED), persona
    if persona not in WRITERS:
        response = client.post(f"/api/tasks/{task.slug}/sandbox/", sentiment_body(context), format="json")
        assert response.status_code in DENIED


@pytest.mark.parametrize("persona", PERSONAS)
def test_an_example_is_seen_by_its_author_the_task_owners_and_admins(world, persona):
    _, round, _, people = world
    example = ExampleFactory(round=round, author=people.annotator)
    response = client_as(people, persona).get(f"/api/examples/{example.pk}/")
    expected = {"annotator": {200}, "owner": {200}, "admin": {200}, "anonymous": DENIED}.get(persona, {404})
    assert response.status_code in expected, persona


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize(("action", "body"), [("retract", {}), ("flag", {"reason": "typo"}),
                                              ("explanation", {"writer_explanation": "negation"})])
def test_only_the_author_acts_on_an_example(world, persona, action, body):
    _, round, _, people = world
    example = ExampleFactory(round=round, author=people.annotator)
    response = client_as(people, persona).post(f"/api/examples/{example.pk}/{action}/", body, format="json")
    expected = {"annotator": {200}, "anonymous": DENIED}.get(persona, {404})
    assert response.status_code in expected, (persona, response.content)


def test_hidden_task_is_not_found_for_an_annotator(world):
    task, _, context, people = world
    Task.objects.filter(pk=task.pk).update(visibility=Task.Visibility.HIDDEN)
    response = client_as(people, "annotator").post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert response.status_code == 404


def test_create_page_needs_login_and_the_annotator_role(world, client):
    task, _, _, people = world
    url = f"/tasks/{task.slug}/create/"
    assert client.get(url).status_code == 302
    client.force_login(people.researcher)
    assert client.get(url).status_code == 403
    client.force_login(people.annotator)
    assert client.get(url).status_code == 200


def test_create_page_of_a_closed_task_says_so(world, client):
    task, round, _, people = world
    round.status = round.Status.CLOSED
    round.save()
    client.force_login(people.annotator)
    response = client.get(f"/tasks/{task.slug}/create/")
    assert response.status_code == 200 and b"no open round" in response.content
    assert b"create-form" not in response.content


def test_create_page_shows_the_context_fields_and_one_choice_per_label(world, client):
    task, _, context, people = world
    client.force_login(people.annotator)
    html = client.get(f"/tasks/{task.slug}/create/").content.decode()
    assert 'id="context-prompt"' in html  # filled by create.js with POST contexts/next/
    assert html.count('name="target"') == 3 and 'id="my-collected"' in html


def test_opening_the_create_page_counts_no_context_use(world, client):
    task, _, context, people = world
    client.force_login(people.annotator)
    client.get(f"/tasks/{task.slug}/create/")
    context.refresh_from_db()
    assert context.times_used == 0  # a GET changes nothing; serving a context is the POST


@pytest.mark.parametrize("persona", PERSONAS)
def test_my_examples_api_is_for_any_signed_in_account(world, persona):
    _, round, _, people = world
    ExampleFactory(round=round, author=people.annotator)
    response = client_as(people, persona).get("/api/me/examples/")
    assert response.status_code in (DENIED if persona == "anonymous" else {200}), persona
    if persona != "anonymous":
        assert response.json()["count"] == (1 if persona == "annotator" else 0)


@pytest.mark.parametrize("persona", PERSONAS)
def test_only_the_author_appeals(world, persona):
    _, round, _, people = world
    example = ExampleFactory(round=round, author=people.annotator, consensus="rejected", validated_label="negative")
    response = client_as(people, persona).post(f"/api/examples/{example.pk}/appeal/", {"reason": "wrong"}, format="json")
    expected = {"annotator": {200}, "anonymous": DENIED}.get(persona, {404})
    assert response.status_code in expected, (persona, response.content)


@pytest.mark.parametrize("persona", PERSONAS)
def test_my_examples_page_and_its_appeal_form(world, persona):
    from django.test import Client

    _, round, _, people = world
    example = ExampleFactory(round=round, author=people.annotator, consensus="rejected", validated_label="negative")
    client = Client()
    if (user := people.get(persona)) is not None:
        client.force_login(user)
    assert client.get("/me/examples/").status_code == (302 if persona == "anonymous" else 200)
    appeal = client.post(f"/me/examples/{example.pk}/appeal/", {"reason": "wrong"})
    assert appeal.status_code == {"annotator": 302, "anonymous": 302}.get(persona, 404), persona
    example.refresh_from_db()
    assert (example.appealed_at is not None) is (persona == "annotator")
