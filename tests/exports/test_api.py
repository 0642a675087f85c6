from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from exports import services
from exports.models import ReadOnlyToken
from tests.exports.conftest import make_example

pytestmark = pytest.mark.django_db

URL = "/api/tasks/sentiment/rounds/{round}/dataset/?format={fmt}&split={split}&version=live"


@pytest.fixture
def owner(open_round, client_for):
    for fooled in (True, False, True, True):
        make_example(open_round, fooled=fooled, consensus="verified")
    return client_for("owner")


@pytest.mark.parametrize(
    "round, fmt, split, message",
    [
        (1, "xlsx", "train", "unknown format 'xlsx'; choose one of: jsonl, csv, parquet"),
        (1, "csv", "validation", "unknown split 'validation'; choose one of: train, dev, test"),
        (9, "csv", "train", "task 'sentiment' has no round '9'; its rounds: 1"),
        ("one", "csv", "train", "task 'sentiment' has no round 'one'; its rounds: 1"),
    ],
)
def test_a_bad_format_split_or_round_is_a_400_that_says_why(owner, round, fmt, split, message):
    response = owner.get(URL.format(round=round, fmt=fmt, split=split))
    assert response.status_code == 400
    assert response.json()["detail"] == message


def test_no_published_snapshot_yet_is_a_400_that_says_so(owner):
    response = owner.get("/api/tasks/sentiment/rounds/1/dataset/?format=csv&split=train")
    assert response.status_code == 400 and "no published snapshot" in response.json()["detail"]


@pytest.mark.parametrize(
    "fmt, media_type",
    [("jsonl", "application/x-ndjson"), ("csv", "text/csv"), ("parquet", "application/vnd.apache.parquet")],
)
def test_dataset_downloads_stream(owner, fmt, media_type):
    response = owner.get(URL.format(round=1, fmt=fmt, split="train"))
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == media_type
    assert f'filename="sentiment-round1-live-train.{fmt}"' in response["Content-Disposition"]
    assert len(b"".join(response.streaming_content)) > 0


def test_the_dataset_list_shows_versions_and_download_links(owner, open_round, personas, client_for):
    services.publish_snapshot(open_round, personas.owner)
    make_example(open_round, fooled=False)
    services.publish_snapshot(open_round, personas.owner, audience="public")
    data = client_for("anonymous").get("/api/tasks/sentiment/datasets/").json()
    assert data["count"] == 2 and data["can_use_live"] is False
    newest, oldest = data["results"]
    assert (newest["version"], newest["can_download"]) == (2, True)
    assert newest["bundle_url"].endswith("/api/tasks/sentiment/rounds/1/bundle/?version=2")
    assert (oldest["version"], oldest["can_download"], oldest["bundle_url"]) == (1, False, None)
    assert "sha256" in newest and newest["counts"]["train"] >= 1


def test_tokens_are_created_once_listed_without_key_and_revoked(client_for, personas):
    client = client_for("researcher")
    created = client.post("/api/tokens/readonly/", {"name": "laptop"}, format="json").json()
    assert created["key"].startswith("dro_")
    listed = client.get("/api/tokens/readonly/").json()
    assert [t["name"] for t in listed] == ["laptop"] and "key" not in listed[0]
    assert client.delete(f"/api/tokens/readonly/{created['id']}/").status_code == 204
    assert ReadOnlyToken.objects.active().count() == 0
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {created['key']}")
    assert other.get("/api/tasks/sentiment/datasets/").status_code == 401


def test_the_downloads_section_renders_for_owners_and_researchers(owner, open_round, personas, client):
    from django.template import Context, Template
    from django.test import RequestFactory

    services.publish_snapshot(open_round, personas.owner)
    template = Template("{% load exports %}{% dataset_downloads task %}")
    for user, sees_publish in ((personas.owner, True), (personas.researcher, False)):
        request = RequestFactory().get("/")
        request.user = user
        html = template.render(Context({"request": request, "task": open_round.task}))
        assert "bundle (zip)" in html
        assert ("Publish round 1 as v2" in html) is sees_publish


def test_the_publish_page_publishes_and_returns_to_the_task(owner, open_round, personas, client):
    client.force_login(personas.owner)
    response = client.post("/tasks/sentiment/rounds/1/publish/", {"audience": "researchers"})
    assert response.status_code == 302 and response["Location"] == "/tasks/sentiment/#downloads"
    assert open_round.snapshots.count() == 1
    client.force_login(personas.researcher)
    assert client.post("/tasks/sentiment/rounds/1/publish/").status_code == 404


def test_a_missing_bundle_file_is_reported_not_rebuilt(owner, open_round, personas):
    snapshot, _ = services.publish_snapshot(open_round, personas.owner)
    services.snapshot_path(snapshot).unlink()
    response = owner.get("/api/tasks/sentiment/rounds/1/bundle/")
    assert response.status_code == 503 and "missing" in response.json()["detail"]


def test_a_snapshot_bundle_has_length_and_checksum_headers(owner, open_round, personas):
    snapshot, _ = services.publish_snapshot(open_round, personas.owner)
    response = owner.get(f"/api/tasks/sentiment/rounds/1/bundle/?version={snapshot.version}")
    assert int(response["Content-Length"]) == snapshot.size_bytes
    assert response["ETag"] == f'"{snapshot.sha256}"'
