"""The download access matrix over the shared personas (and a read-only token)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from exports import services
from exports.models import ReadOnlyToken
from tasks.models import Task
from tests.exports.conftest import make_example

pytestmark = pytest.mark.django_db

ALLOW, DENY, HIDDEN = 200, 403, 404


@pytest.fixture
def published(open_round, personas):
    for fooled in (True, False, True):
        make_example(open_round, fooled=fooled, consensus="verified")
    snapshot, _ = services.publish_snapshot(open_round, personas.owner)
    return snapshot


def bundle(client, version="latest") -> int:
    return client.get(f"/api/tasks/sentiment/rounds/1/bundle/?version={version}").status_code


def split_file(client, version="latest") -> int:
    return client.get(f"/api/tasks/sentiment/rounds/1/dataset/?format=csv&split=train&version={version}").status_code


def token_client(user) -> APIClient:
    _, raw = ReadOnlyToken.issue(user, "script")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.mark.parametrize(
    "persona, published_access, live_access",
    [
        ("owner", ALLOW, ALLOW),
        ("admin", ALLOW, ALLOW),
        ("researcher", ALLOW, DENY),
        ("annotator", DENY, DENY),
        ("validator", DENY, DENY),
        ("outsider", DENY, DENY),
        ("anonymous", DENY, DENY),
    ],
)
def test_researcher_snapshot_on_a_public_task(published, client_for, persona, published_access, live_access):
    client = client_for(persona)
    assert bundle(client) == published_access
    assert split_file(client) == published_access
    assert bundle(client, "live") == live_access
    assert split_file(client, "live") == live_access


@pytest.mark.parametrize("persona", ["annotator", "outsider", "anonymous", "researcher"])
def test_an_open_snapshot_of_a_public_task_is_for_everyone(published, client_for, persona):
    published.audience = "public"
    published.save()
    assert bundle(client_for(persona)) == ALLOW
    assert bundle(client_for(persona), "live") == DENY


@pytest.mark.parametrize(
    "persona, expected",
    [("owner", ALLOW), ("admin", ALLOW), ("researcher", HIDDEN), ("outsider", HIDDEN), ("anonymous", HIDDEN)],
)
def test_a_hidden_task_exists_only_for_its_owners_and_admins(published, client_for, persona, expected):
    Task.objects.filter(pk=published.task_id).update(visibility=Task.Visibility.HIDDEN)
    published.audience = "public"
    published.save()
    client = client_for(persona)
    assert bundle(client) == expected
    assert client.get("/api/tasks/sentiment/datasets/").status_code == expected


def test_a_read_only_token_downloads_what_its_user_may(published, personas):
    client = token_client(personas.researcher)
    response = client.get("/api/tasks/sentiment/rounds/1/bundle/")
    assert response.status_code == ALLOW
    assert response["X-Checksum-SHA256"] == published.sha256
    assert b"".join(response.streaming_content)[:2] == b"PK"
    assert split_file(client, "live") == DENY


def test_a_read_only_token_cannot_write(published, personas):
    client = token_client(personas.owner)
    response = client.post("/api/tasks/sentiment/rounds/1/snapshots/", {}, format="json")
    assert response.status_code == DENY
    assert "read-only" in response.json()["detail"]
    assert client.post("/api/tokens/readonly/", {"name": "x"}, format="json").status_code == DENY
    assert bundle(client, "live") == ALLOW


def test_a_revoked_or_unknown_token_is_refused(published, personas):
    token, raw = ReadOnlyToken.issue(personas.researcher)
    token.revoke()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert bundle(client) == 401
    client.credentials(HTTP_AUTHORIZATION="Bearer dro_not-a-real-key")
    assert bundle(client) == 401


def test_only_owners_publish(open_round, client_for):
    make_example(open_round, consensus="verified")
    assert (
        client_for("researcher").post("/api/tasks/sentiment/rounds/1/snapshots/", {}, format="json").status_code == DENY
    )
    response = client_for("owner").post(
        "/api/tasks/sentiment/rounds/1/snapshots/", {"audience": "public"}, format="json"
    )
    assert response.status_code == 201 and response.json()["version"] == 1
    again = client_for("owner").post("/api/tasks/sentiment/rounds/1/snapshots/", {"audience": "public"}, format="json")
    assert again.status_code == 200 and again.json()["version"] == 1


def test_the_task_page_offers_only_splits_that_hold_rows(client, personas, task, open_round):
    from exports.models import DatasetSnapshot

    DatasetSnapshot.objects.create(task=task, round=open_round, version=1, audience="public", path="x.zip",
                                   sha256="0" * 64, content_sha256="0" * 64, size_bytes=10,
                                   counts={"train": 12, "dev": 0, "test": 0}, formats=["jsonl"])
    client.force_login(personas.researcher)
    downloads = client.get(f"/tasks/{task.slug}/").content.decode().split('id="downloads"')[1]
    assert "split=train" in downloads and "split=dev" not in downloads and "split=test" not in downloads
