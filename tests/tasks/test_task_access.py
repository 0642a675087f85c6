"""Which tasks a request may see: one rule for every page and API. Hidden or inactive tasks exist only
for their owners and admins (404 for everyone else, never 403); roles decide what a visible task allows."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import RoundFactory

READABLE = [  # pages and API views anyone who sees the task may read
    "/tasks/{slug}/",
    "/tasks/{slug}/figures/",
    "/tasks/{slug}/leaderboard/",
    "/tasks/{slug}/dashboard/",
    "/api/tasks/{slug}/",
    "/api/tasks/{slug}/stats/",
    "/api/tasks/{slug}/rounds/",
    "/api/tasks/{slug}/leaderboard/",
    "/api/tasks/{slug}/dashboard/",
    "/api/tasks/{slug}/datasets/",
    "/api/tasks/{slug}/models/",
]


@pytest.fixture
def shut(task, open_round):
    """The task, made hidden or inactive by each test."""

    def make(**fields):
        for name, value in fields.items():
            setattr(task, name, value)
        task.save()
        return task

    return make


@pytest.fixture
def visitor(personas):
    """A client signed in as a persona, for pages and API alike (None: anonymous)."""

    def make(persona: str) -> Client:
        client = Client()
        user = personas.get(persona)
        if user is not None:
            client.force_login(user)
        return client

    return make


@pytest.mark.parametrize("state", [{"visibility": "hidden"}, {"active": False}])
@pytest.mark.parametrize("url", READABLE)
def test_hidden_and_inactive_tasks_are_not_found_except_for_owners_and_admins(url, state, shut, visitor):
    task = shut(**state)
    address = url.format(slug=task.slug)
    for persona in ("anonymous", "outsider", "researcher", "annotator"):
        assert visitor(persona).get(address).status_code == 404, (persona, address)
    for persona in ("owner", "admin"):
        assert visitor(persona).get(address).status_code == 200, (persona, address)


@pytest.mark.parametrize("url", READABLE)
def test_a_public_active_task_is_readable_by_everyone(url, task, open_round, visitor):
    assert visitor("anonymous").get(url.format(slug=task.slug)).status_code == 200


def test_an_inactive_task_takes_no_work_from_the_crowd(shut, client_for, personas, client):
    task = shut(active=False)
    assert client_for("annotator").post(f"/api/tasks/{task.slug}/contexts/next/").status_code == 404
    assert client_for("validator").post(f"/api/tasks/{task.slug}/validation/next/").status_code == 404
    client.force_login(personas.annotator)
    assert client.get(f"/tasks/{task.slug}/create/").status_code == 404


def test_task_lists_show_inactive_tasks_to_their_owners_only(shut, client_for, personas, client):
    task = shut(active=False)
    other = RoundFactory(number=1).task  # a public, active task of someone else
    listed = lambda persona: {row["slug"] for row in client_for(persona).get("/api/tasks/").json()["results"]}  # noqa: E731
    assert listed("outsider") == {other.slug}
    assert listed("owner") == {task.slug, other.slug}
    client.force_login(personas.owner)
    row = client.get("/").content.decode().split(f'data-task="{task.slug}"')[1].split("</tr>")[0]
    assert ">inactive<" in row


def test_a_role_is_needed_on_a_visible_task(task, open_round, personas, client):
    client.force_login(personas.outsider)
    assert client.get(f"/tasks/{task.slug}/create/").status_code == 403
    assert client.get(f"/tasks/{task.slug}/expert/").status_code == 403
    assert client.get(f"/tasks/{task.slug}/console/").status_code == 403
