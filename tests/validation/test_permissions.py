"""Allow/deny matrix over the shared personas for every validation endpoint and page."""

import pytest
from django.test import Client

from tests.factories import ExampleFactory
from tests.personas import PERSONAS

VALIDATORS = {"validator", "expert", "owner", "admin"}
EXPERTS = {"expert", "owner", "admin"}


def expected(persona: str, allowed: set[str], deny: int) -> int | None:
    if persona in allowed:
        return None
    return 401 if persona == "anonymous" else deny


@pytest.mark.parametrize("persona", PERSONAS)
def test_next_item_matrix(client_for, task, open_round, persona):
    ExampleFactory(round=open_round)
    response = client_for(persona).post(f"/api/tasks/{task.slug}/validation/next/")
    assert response.status_code == (expected(persona, VALIDATORS, 403) or 200)


@pytest.mark.parametrize("persona", PERSONAS)
def test_vote_matrix(client_for, open_round, persona):
    example = ExampleFactory(round=open_round)
    response = client_for(persona).post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"}, format="json")
    assert response.status_code == (expected(persona, VALIDATORS, 403) or 201)


@pytest.mark.parametrize("persona", PERSONAS)
def test_stats_are_public_for_a_public_task(client_for, task, persona):
    assert client_for(persona).get(f"/api/tasks/{task.slug}/stats/").status_code == 200


@pytest.mark.parametrize("persona", PERSONAS)
def test_hidden_task_stats_only_for_owners_and_admins(client_for, task, persona):
    task.visibility = "hidden"
    task.save()
    status = client_for(persona).get(f"/api/tasks/{task.slug}/stats/").status_code
    assert status == (200 if persona in {"owner", "admin"} else 404)


def page_client(personas, persona: str) -> Client:
    client = Client()
    user = personas.get(persona)
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.parametrize("persona", PERSONAS)
def test_validation_page_matrix(personas, task, persona):
    response = page_client(personas, persona).get(f"/tasks/{task.slug}/validate/")
    assert response.status_code == (302 if persona == "anonymous" else 200 if persona in VALIDATORS else 403)


@pytest.mark.parametrize("persona", PERSONAS)
def test_expert_page_matrix(personas, task, persona):
    response = page_client(personas, persona).get(f"/tasks/{task.slug}/expert/")
    assert response.status_code == (302 if persona == "anonymous" else 200 if persona in EXPERTS else 403)


@pytest.mark.parametrize("persona", PERSONAS)
def test_expert_resolve_matrix(personas, task, open_round, persona):
    example = ExampleFactory(round=open_round, consensus="disputed")
    response = page_client(personas, persona).post(f"/tasks/{task.slug}/expert/{example.pk}/resolve/", {"verdict": "correct"})
    assert response.status_code == (302 if persona == "anonymous" or persona in EXPERTS else 403)
    example.refresh_from_db()
    assert (example.consensus == "verified") is (persona in EXPERTS)


@pytest.mark.parametrize("persona", PERSONAS)
def test_figures_page_is_public(personas, task, persona):
    assert page_client(personas, persona).get(f"/tasks/{task.slug}/figures/").status_code == 200
