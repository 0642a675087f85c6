"""Putting an uploaded model in the loop (issue 40): an owner has the next round trained from an evaluated upload
(the task's retraining.encoder becomes upload:<id>), from the leaderboard, the console or the API, and stops it."""

from __future__ import annotations

import pytest

from modelzoo import encoders
from modelzoo.models import ModelVersion
from rounds.models import ResearcherModel
from tasks.models import Task
from zoo import tiny


@pytest.fixture
def folder(settings, tmp_path):
    """A tiny BERT checkpoint stored where the task's uploads are (MODEL_STORE)."""
    settings.MODEL_STORE = tmp_path / "models"
    return tiny.tiny_checkpoint("bert", tmp_path / "models" / "uploads" / "lab")


def make_upload(task, researcher, folder, name="lab-model", status=ResearcherModel.Status.EVALUATED, error=""):
    version = ModelVersion.objects.create(task=task, version=ModelVersion.objects.filter(task=task).count() + 1,
                                          name=name, head="classification", status=ModelVersion.Status.READY,
                                          artifact=str(folder.relative_to(folder.parents[1])))
    return ResearcherModel.objects.create(task=task, uploaded_by=researcher, name=name, model_version=version,
                                          status=status, error=error)


@pytest.fixture
def upload(task, personas, folder):
    return make_upload(task, personas.researcher, folder)


def stored_encoder(task) -> str:
    return Task.objects.get(pk=task.pk).typed_config.retraining.encoder


def page(client, user, upload, on: str, next_page: str):
    client.force_login(user)
    return client.post(f"/console/uploads/{upload.pk}/retrain-from/", {"retrain_from": on, "next": next_page},
                       follow=True)


def test_owner_trains_the_next_round_from_an_upload_and_stops(client, personas, task, upload, folder):
    board = f"/tasks/{task.slug}/leaderboard/"
    response = page(client, personas.owner, upload, "1", board)
    assert response.redirect_chain == [(board, 302)]
    text = response.content.decode()
    assert (f"The next round&#x27;s models are trained from {upload.name} (its weights; a new head for this task&#x27;s "
            f"labels).") in text
    assert "the next round trains from this model" in text and "Stop training from this model" in text
    assert stored_encoder(task) == f"upload:{upload.pk}"
    assert encoders.encoder_for(Task.objects.get(pk=task.pk)) == str(folder.resolve())

    console = f"/tasks/{task.slug}/console/rounds/"
    assert "Stop training from this model" in client.get(console).content.decode()
    response = page(client, personas.owner, upload, "0", console)
    assert response.redirect_chain == [(console, 302)]
    assert "Train the next round from this model" in response.content.decode()
    assert stored_encoder(task) == ""
    assert encoders.label_of(Task.objects.get(pk=task.pk)) != f"upload:{upload.pk}"


def test_stopping_leaves_another_encoder_alone(personas, task, upload, folder):
    from rounds import uploads

    other = make_upload(task, personas.researcher, folder, name="other")
    uploads.retrain_from(other, personas.owner, True)
    uploads.retrain_from(upload, personas.owner, False)  # not the one in the loop: nothing changes
    assert stored_encoder(task) == f"upload:{other.pk}"
    task.config = {**task.config, "retraining": {**task.config.get("retraining", {}), "encoder": "upload:other"}}
    task.save()
    assert uploads.trains_from(task) == other.pk  # named by its name, it is still this upload
    uploads.retrain_from(other, personas.owner, False)
    assert stored_encoder(task) == ""


@pytest.mark.parametrize("who", ["researcher", "annotator"])
def test_others_are_refused(client, personas, task, upload, who):
    client.force_login(getattr(personas, who))  # the researcher who uploaded it is no owner either
    response = client.post(f"/console/uploads/{upload.pk}/retrain-from/", {"retrain_from": "1"})
    assert response.status_code == 403 and "Only the task&#x27;s owners and admins" in response.content.decode()


def test_anonymous_is_sent_to_sign_in(client, task, upload):
    response = client.post(f"/console/uploads/{upload.pk}/retrain-from/", {"retrain_from": "1"})
    assert response.status_code == 302 and "login" in response["Location"]
    assert stored_encoder(task) == ""


def test_the_api_sets_clears_and_refuses(client_for, task, upload, folder):
    url = f"/api/models/uploads/{upload.pk}/retrain-from/"
    for who in ("researcher", "annotator"):
        answer = client_for(who).post(url, {"retrain_from": True}, format="json")
        assert answer.status_code == 403 and answer.json()["code"] == "permission_denied"
    assert client_for("anonymous").post(url, {"retrain_from": True}, format="json").status_code in (401, 403)
    assert client_for("owner").post("/api/models/uploads/999999/retrain-from/", {"retrain_from": True},
                                    format="json").status_code == 404
    for bad in ({}, {"retrain_from": "perhaps"}, {"include": True}):
        answer = client_for("owner").post(url, bad, format="json")
        assert answer.status_code == 400 and "retrain_from" in answer.json()["errors"], answer.json()
    assert stored_encoder(task) == ""
    body = client_for("owner").post(url, {"retrain_from": True}, format="json").json()
    assert body["retrain_from"] is True and body["encoder"] == f"upload:{upload.pk}"
    assert encoders.encoder_for(Task.objects.get(pk=task.pk)) == str(folder.resolve())
    body = client_for("owner").post(url, {"retrain_from": False}, format="json").json()
    assert body["retrain_from"] is False and body["encoder"] == "" and stored_encoder(task) == ""


def test_a_failed_upload_is_refused_with_the_reason(client, client_for, personas, task, folder):
    failed = make_upload(task, personas.researcher, folder, name="broken", status=ResearcherModel.Status.FAILED,
                         error="RuntimeError: shapes do not match")
    answer = client_for("owner").post(f"/api/models/uploads/{failed.pk}/retrain-from/", {"retrain_from": True},
                                      format="json")
    assert answer.status_code == 400 and "shapes do not match" in answer.json()["detail"]
    board = f"/tasks/{task.slug}/leaderboard/"
    response = page(client, personas.owner, failed, "1", board)
    assert response.redirect_chain == [(board, 302)] and "shapes do not match" in response.content.decode()
    assert stored_encoder(task) == ""


def test_an_upload_whose_files_cannot_be_trained_from_gives_the_encoder_check_reason(client_for, personas, task,
                                                                                      folder):
    version_failed = make_upload(task, personas.researcher, folder, name="gone")
    ModelVersion.objects.filter(pk=version_failed.model_version_id).update(status=ModelVersion.Status.FAILED)
    answer = client_for("owner").post(f"/api/models/uploads/{version_failed.pk}/retrain-from/",
                                      {"retrain_from": True}, format="json")
    assert answer.status_code == 400 and "cannot be put in the loop" in answer.json()["detail"]
    assert stored_encoder(task) == ""
