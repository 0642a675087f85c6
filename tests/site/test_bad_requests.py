"""Requests that used to answer 500 answer 4xx with a message that says what was wrong."""

from __future__ import annotations

import pytest

from tests.factories import RoundFactory, TaskFactory


@pytest.fixture
def world(db, personas, open_round):
    return personas


@pytest.mark.parametrize("value", ["²", "٣", "abc", "-1", "1.5", "99999999999999999999"])
def test_a_round_that_is_not_a_plain_number_is_a_400_on_the_dashboard_api(client_for, world, value):
    response = client_for("anonymous").get("/api/tasks/sentiment/dashboard/", {"round": value})
    assert response.status_code == 400
    body = response.json()
    assert body["detail"].startswith("round: must be a whole number") and "round" in body["errors"]


def test_a_plain_round_number_still_chooses_the_dashboards_round(client_for, world):
    response = client_for("anonymous").get("/api/tasks/sentiment/dashboard/", {"round": "1"})
    assert response.status_code == 200 and response.json()["round"] == 1


@pytest.mark.parametrize("value", ["abc", "²", "1e3"])
def test_a_bad_round_filter_on_ensembles_is_a_400(client_for, world, value):
    response = client_for("anonymous").get("/api/ensembles/", {"round": value})
    assert response.status_code == 400 and "round: must be a whole number" in response.json()["detail"]
    assert client_for("anonymous").get("/api/ensembles/", {"round": "1"}).status_code == 200


@pytest.mark.parametrize("path", ["/tasks/sentiment/dashboard/?round=%C2%B2", "/tasks/sentiment/expert/?round=abc"])
def test_pages_answer_a_bad_round_with_the_error_page(client, world, path):
    client.force_login(world.owner)
    response = client.get(path)
    assert response.status_code == 400 and b"round: must be a whole number" in response.content


def test_a_bad_guidelines_version_is_a_message_not_a_500(client, world):
    from tasks import guidelines

    task = TaskFactory(slug="sentiment")
    guidelines.publish(task, "Be kind.", by=world.owner)
    client.force_login(world.annotator)
    response = client.post("/tasks/sentiment/guidelines/acknowledge/", {"version": "²"}, follow=True)
    assert response.status_code == 200 and "version: must be a whole number" in response.content.decode()


def test_a_body_declared_larger_than_the_cap_is_refused_before_it_is_read(client_for, world, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = client_for("annotator")
    response = client.generic("POST", "/api/tasks/sentiment/examples/", b"{}", content_type="application/json",
                              CONTENT_LENGTH="5000")
    assert response.status_code == 413
    assert response.json()["detail"] == "The request body is too large (5000 bytes; the limit is 1000 bytes)."


def test_an_unknown_round_in_a_dataset_address_is_a_404_or_400_not_a_500(client_for, world):
    RoundFactory(task=TaskFactory(slug="sentiment"), number=2, status="draft")
    for number in ("²", "abc", "99999999999"):
        response = client_for("owner").get(f"/api/tasks/sentiment/rounds/{number}/dataset/")
        assert 400 <= response.status_code < 500, number
