"""A service's refusal (a domain error) reaches people the same way everywhere: the API answers its status
as {"detail", "code", "errors"?, ...}; a form page goes back to where the form was, saying why; any other
page shows the error page with the status."""

from __future__ import annotations

import pytest

from rounds.models import PipelineRun, ResearcherModel


@pytest.fixture
def done_run(task, personas):
    return PipelineRun.objects.create(task=task, status=PipelineRun.Status.DONE, started_by=personas.owner)


def test_api_conflict_answers_409_with_the_rule_and_the_run_in_the_way(client_for, done_run):
    response = client_for("owner").post(f"/api/jobs/{done_run.pk}/retry/")
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "conflict" and body["job"] == done_run.pk
    assert "only a failed or stalled pipeline can be retried" in body["detail"]


def test_api_bad_input_names_the_field(client_for, task, open_round):
    response = client_for("owner").post("/api/tasks/sentiment/rounds/", {"options": {"epochs": 0}}, format="json")
    body = response.json()
    assert response.status_code == 400 and body["code"] == "invalid"
    assert body["detail"].startswith("options: ") and "epochs" in body["errors"]["options"][0]


def test_api_export_refusal_is_a_400_saying_what_is_wrong(client_for, task, open_round):
    response = client_for("owner").get("/api/tasks/sentiment/rounds/1/dataset/", {"version": "live", "split": "nope"})
    assert response.status_code == 400 and "unknown split 'nope'" in response.json()["detail"]


def test_a_refused_form_goes_back_to_its_page_with_the_reason(client, personas, done_run):
    client.force_login(personas.owner)
    response = client.post(f"/console/jobs/{done_run.pk}/retry/", follow=True)
    assert response.redirect_chain == [(f"/console/jobs/{done_run.pk}/", 302)]
    assert "only a failed or stalled pipeline can be retried" in response.content.decode()


@pytest.fixture
def unevaluated_upload(task, personas):
    return ResearcherModel.objects.create(task=task, uploaded_by=personas.researcher, name="mine")


def test_a_refused_form_returns_to_the_page_it_names(client, personas, task, unevaluated_upload):
    client.force_login(personas.owner)
    page = f"/tasks/{task.slug}/leaderboard/?round=1"
    response = client.post(f"/console/uploads/{unevaluated_upload.pk}/ensemble/", {"include": "1", "next": page})
    assert response.status_code == 302 and response["Location"] == page
    assert "only an evaluated model can join" in client.get(page).content.decode()


def test_a_form_that_names_no_page_to_return_to_shows_the_error_page(client, personas, unevaluated_upload):
    client.force_login(personas.owner)
    for foreign in ("", "https://elsewhere.example/"):
        response = client.post(f"/console/uploads/{unevaluated_upload.pk}/ensemble/", {"include": "1", "next": foreign})
        assert response.status_code == 400
        assert "only an evaluated model can join" in response.content.decode()


def test_a_refusal_for_lack_of_permission_is_403_on_pages_and_api(client, client_for, personas, unevaluated_upload):
    api = client_for("researcher").post(f"/api/models/uploads/{unevaluated_upload.pk}/ensemble/", {"include": True},
                                        format="json")
    assert api.status_code == 403 and api.json()["code"] == "permission_denied"
    client.force_login(personas.researcher)
    page = client.post(f"/console/uploads/{unevaluated_upload.pk}/ensemble/", {"include": "1"})
    assert page.status_code == 403 and "Only the task&#x27;s owners and admins" in page.content.decode()
