import pytest
from rest_framework.test import APIClient

from tasks.models import Task
from tests.factories import PASSWORD, ExampleFactory, RoundFactory, TaskFactory, UserFactory


@pytest.fixture
def tasks(db):
    public = TaskFactory(slug="public-nli", kind="nli")
    hidden = TaskFactory(slug="secret-qa", kind="qa", visibility=Task.Visibility.HIDDEN)
    round_ = RoundFactory(task=public, number=1)
    ExampleFactory.create_batch(3, round=round_, fooled=True, consensus="verified", input={"hypothesis": "h"}, target="neutral")
    ExampleFactory(round=round_, fooled=False, input={"hypothesis": "x"}, target="neutral")
    ExampleFactory(round=round_, fooled=True, retracted=True, input={"hypothesis": "y"}, target="neutral")
    return public, hidden


def test_task_list_shows_public_tasks_with_derived_figures(api, tasks):
    response = api.get("/api/tasks/")
    assert response.status_code == 200
    rows = {row["slug"]: row for row in response.json()["results"]}
    assert set(rows) == {"public-nli"}
    assert rows["public-nli"]["current_round"] == 1
    figures = rows["public-nli"]["figures"]
    assert (figures["collected"], figures["fooled"], figures["verified_fooled"]) == (4, 3, 3)  # retracted not counted
    assert figures["mer"] == 0.75 and figures["vmer"] == 0.75


def test_task_detail_has_kind_config_rounds_and_figures(api, tasks):
    body = api.get("/api/tasks/public-nli/").json()
    assert body["kind"] == "nli"
    assert body["config"]["labels"] == ["entailment", "neutral", "contradiction"]
    assert body["config"]["context_fields"] == ["premise"]
    assert body["rounds"][0]["number"] == 1 and body["rounds"][0]["status"] == "open"
    assert body["round_figures"]["1"]["collected"] == 4


def test_hidden_task_is_visible_to_owners_and_admins_only(tasks):
    _, hidden = tasks
    owner, stranger = UserFactory(username="own"), UserFactory(username="stranger")
    admin = UserFactory(username="boss", is_staff=True)
    hidden.owners.add(owner)
    for user, status in [(None, 404), (stranger, 404), (owner, 200), (admin, 200)]:
        client = APIClient()
        if user:
            client.force_authenticate(user)
        assert client.get("/api/tasks/secret-qa/").status_code == status


def test_unknown_task_is_a_404_with_a_message(api, db):
    response = api.get("/api/tasks/nope/")
    assert response.status_code == 404
    assert response.json()["detail"]


def test_token_auth_round_trip(api, db):
    UserFactory(username="scripter")
    response = api.post("/api/auth/token/", {"username": "scripter", "password": PASSWORD}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/tasks/").status_code == 200
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert bad.get("/api/tasks/").status_code == 401


def test_token_endpoint_says_what_was_wrong(api, db):
    UserFactory(username="scripter")
    wrong = api.post("/api/auth/token/", {"username": "scripter", "password": "nope"}, format="json")
    assert wrong.status_code == 400
    assert "Unable to log in" in wrong.json()["detail"]
    missing = api.post("/api/auth/token/", {"username": "scripter"}, format="json")
    assert missing.status_code == 400
    assert "password" in missing.json()["errors"]


def test_tasks_are_read_only_over_the_api(api, tasks):
    api.force_authenticate(UserFactory(username="writer"))
    assert api.post("/api/tasks/", {"slug": "x"}, format="json").status_code == 405
    assert api.delete("/api/tasks/public-nli/").status_code == 405


def test_openapi_schema_and_docs(api, db):
    schema = api.get("/api/schema/?format=json")
    assert schema.status_code == 200
    assert schema["Content-Type"].startswith("application/vnd.oai.openapi+json")
    paths = schema.json()["paths"]
    assert "/api/tasks/" in paths and "/api/tasks/{slug}/" in paths and "/api/auth/token/" in paths
    docs = api.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
