"""Work that gets stuck is visible and can be retried or abandoned: a pipeline whose job could not be queued, a
pipeline no worker picked up or that stopped reporting, and a researcher's upload whose evaluation never ended."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from rounds import evaluation, jobs, pipeline, services
from rounds.models import PipelineRun, ResearcherModel
from tests.factories import TaskFactory
from tests.personas import PERSONAS
from tests.rounds.conftest import fill_task

ALLOWED = {"owner", "admin"}
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
LONG_AGO = timezone.now() - timezone.timedelta(hours=2)


@pytest.fixture
def task(db):
    task = TaskFactory(slug="small", kind="sentiment")
    round_ = fill_task(task, pool=6, test=6, examples=12)
    ids = list(round_.examples.values_list("id", flat=True)[:4])
    round_.examples.filter(id__in=ids).update(split="test")
    return task


# --- pipelines -----------------------------------------------------------------------------------------


def test_a_pipeline_that_could_not_be_queued_fails_visibly_and_runs_when_retried(
    task, personas, broker_down, settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_pipeline(task, personas.owner)
    run.refresh_from_db()
    assert run.status == "failed" and run.error.startswith("could not enqueue: ")
    assert run.steps.filter(status="pending").count() == run.steps.count()  # nothing ran
    settings.JOB_RUNNER = "inline"  # the broker is back (a worker takes the job)
    services.retry_pipeline(run, personas.owner)
    run.refresh_from_db()
    assert run.status == "done" and task.current_round.number == 2


def test_the_job_page_says_why_a_run_failed_and_offers_retry_and_abandon(task, personas, client):
    run = PipelineRun.objects.create(task=task, status="failed", error="could not enqueue: OperationalError: down")
    client.force_login(personas.owner)
    page = client.get(f"/console/jobs/{run.pk}/").content.decode()
    assert "could not enqueue: OperationalError: down" in page
    assert f"/console/jobs/{run.pk}/retry/" in page and f"/console/jobs/{run.pk}/abandon/" in page


def test_a_pending_run_no_worker_picked_up_is_stuck_and_can_be_abandoned(task, personas, client_for, settings):
    settings.JOB_RUNNER = ""  # queued after commit, which never comes: the message is "lost"
    run = services.start_pipeline(task, personas.owner)
    body = client_for("owner").get(f"/api/jobs/{run.pk}/").json()
    assert body["stale"] is False and body["actions"]["abandon"] is False  # just queued: not stuck yet
    PipelineRun.objects.filter(pk=run.pk).update(created_at=LONG_AGO)
    body = client_for("owner").get(f"/api/jobs/{run.pk}/").json()
    assert body["stale"] is True and body["actions"] == {"retry": True, "abandon": True, "approve": False,
                                                         "discard": False}
    response = client_for("owner").post(f"/api/jobs/{run.pk}/abandon/")
    assert response.status_code == 200 and response.json()["status"] == "abandoned"
    assert "no worker picked the run up" in PipelineRun.objects.get(pk=run.pk).error
    assert services.start_pipeline(task, personas.owner).pk != run.pk  # the slot is free


def test_a_run_that_stopped_reporting_can_be_retried_from_its_page(task, personas, client, settings):
    settings.JOB_RUNNER = ""
    run = services.start_pipeline(task, personas.owner)
    PipelineRun.objects.filter(pk=run.pk).update(status="running", heartbeat_at=LONG_AGO)
    run.steps.filter(name="freeze").update(status="running")
    client.force_login(personas.owner)
    page = client.get(f"/console/jobs/{run.pk}/").content.decode()
    assert "it is stuck" in page
    assert client.post(f"/console/jobs/{run.pk}/retry/").status_code == 302
    run.refresh_from_db()
    assert run.status == "pending" and run.steps.get(name="freeze").status == "failed"


def test_a_running_run_that_still_reports_cannot_be_abandoned(task, personas, client_for, settings):
    settings.JOB_RUNNER = ""
    run = services.start_pipeline(task, personas.owner)
    PipelineRun.objects.filter(pk=run.pk).update(status="running", heartbeat_at=timezone.now())
    response = client_for("owner").post(f"/api/jobs/{run.pk}/abandon/")
    assert response.status_code == 409 and "silent for" in response.json()["detail"]
    assert PipelineRun.objects.get(pk=run.pk).status == "running"


# --- researchers' uploads ------------------------------------------------------------------------------


@pytest.fixture
def upload(task, personas, client_for, tmp_path_factory, settings):
    """A researcher's upload whose evaluation was never run (queued after a commit that never comes)."""
    from modelzoo.testing import build_tiny_artifact

    folder = build_tiny_artifact(task, tmp_path_factory.mktemp("upload") / "model")
    settings.JOB_RUNNER = ""
    files = [SimpleUploadedFile(n, (folder / n).read_bytes()) for n in FILES]
    response = client_for("researcher").post("/api/tasks/small/models/", {"name": "mine", "files": files},
                                             format="multipart")
    assert response.status_code == 201, response.content
    settings.JOB_RUNNER = "inline"
    return ResearcherModel.objects.get(pk=response.json()["id"])


def test_an_upload_stuck_evaluating_is_shown_and_can_be_retried(upload, client_for, personas, client):
    assert client_for("owner").post(f"/api/models/uploads/{upload.pk}/retry/").status_code == 409  # not stuck yet
    ResearcherModel.objects.filter(pk=upload.pk).update(queued_at=LONG_AGO)
    listed = client_for("owner").get("/api/tasks/small/models/").json()["uploads"][0]
    assert listed["status"] == "evaluating" and listed["stuck"] is True
    client.force_login(personas.owner)
    page = client.get("/tasks/small/console/rounds/").content.decode()
    assert f"/console/uploads/{upload.pk}/retry/" in page and f"/console/uploads/{upload.pk}/abandon/" in page
    response = client_for("owner").post(f"/api/models/uploads/{upload.pk}/retry/")
    assert response.status_code == 202 and response.json()["status"] == "evaluated"


def test_a_failed_upload_can_be_retried_from_the_console(upload, personas, client):
    ResearcherModel.objects.filter(pk=upload.pk).update(status="failed", error="worker lost")
    client.force_login(personas.owner)
    response = client.post(f"/console/uploads/{upload.pk}/retry/", {"next": "/tasks/small/console/rounds/"})
    assert response.status_code == 302 and response["Location"] == "/tasks/small/console/rounds/"
    upload.refresh_from_db()
    assert upload.status == "evaluated" and upload.error == ""


def test_an_abandoned_upload_stays_abandoned_when_a_late_evaluation_arrives(upload, client_for):
    response = client_for("owner").post(f"/api/models/uploads/{upload.pk}/abandon/")
    assert response.status_code == 200 and response.json()["status"] == "abandoned"
    evaluation.evaluate_upload(upload.pk)  # the lost job turns up after all
    upload.refresh_from_db()
    assert upload.status == "abandoned" and not upload.in_next_ensemble


@pytest.mark.parametrize("action", ["retry", "abandon"])
@pytest.mark.parametrize("persona", PERSONAS)
def test_only_owners_and_admins_may_retry_or_abandon_an_upload(persona, action, upload, client_for):
    ResearcherModel.objects.filter(pk=upload.pk).update(status="failed")
    response = client_for(persona).post(f"/api/models/uploads/{upload.pk}/{action}/")
    upload.refresh_from_db()
    if persona in ALLOWED:
        assert response.status_code in (200, 202) and upload.status in ("evaluated", "abandoned")
    else:
        assert response.status_code == (401 if persona == "anonymous" else 403)
        assert upload.status == "failed"


def test_the_console_health_page_shows_stuck_work(task, personas, client, upload, settings):
    settings.JOB_RUNNER = ""
    run = services.start_pipeline(task, personas.owner)
    PipelineRun.objects.filter(pk=run.pk).update(status="running", heartbeat_at=LONG_AGO)
    ResearcherModel.objects.filter(pk=upload.pk).update(queued_at=LONG_AGO)
    client.force_login(personas.owner)
    page = client.get("/tasks/small/console/health/").content.decode()
    assert 'id="health-run-stuck"' in page and 'id="health-uploads-stuck"' in page and "mine" in page


def test_a_run_whose_worker_was_killed_mid_step_is_taken_over_and_finishes_once(task, personas, settings):
    """kill -9 mid-step leaves the run `running` with a silent heartbeat: the beat sweep queues it again, and the
    interrupted step runs again (steps are idempotent) — one finished run, each step done once."""
    settings.JOB_RUNNER = ""
    run = services.start_pipeline(task, personas.owner)
    PipelineRun.objects.filter(pk=run.pk).update(status="running", heartbeat_at=timezone.now())
    run.steps.filter(name="freeze").update(status="running")
    assert pipeline.execute(run.pk).status == "running"  # a redelivery while the worker still reports: left alone
    assert jobs.resume_silent_pipelines() == 0
    PipelineRun.objects.filter(pk=run.pk).update(heartbeat_at=LONG_AGO)  # the worker went silent
    settings.JOB_RUNNER = "inline"
    assert jobs.resume_silent_pipelines() == 1
    run.refresh_from_db()
    assert run.status == "done" and task.current_round.number == 2
    assert set(run.steps.values_list("status", flat=True)) == {"done"}
    assert "taken over" in run.steps.get(name="freeze").log
