"""Only owners and admins may run the round pipeline or see its jobs; everyone who sees the task sees figures."""

from __future__ import annotations

import pytest

from rounds.models import PipelineRun
from tests.factories import TaskFactory
from tests.personas import PERSONAS

ALLOWED = {"owner", "admin"}


@pytest.fixture
def task(db):
    return TaskFactory(slug="small", kind="sentiment")


@pytest.fixture(autouse=True)
def _no_dispatch(settings):
    """Jobs start once the transaction commits, which a test's transaction never does: runs stay pending."""
    settings.JOB_RUNNER = ""


@pytest.mark.parametrize("persona", PERSONAS)
def test_only_owners_and_admins_may_open_the_next_round(persona, client_for, task):
    response = client_for(persona).post("/api/tasks/small/rounds/", {}, format="json")
    if persona in ALLOWED:
        assert response.status_code == 202
        assert PipelineRun.objects.filter(task=task).count() == 1
    else:
        assert response.status_code == (401 if persona == "anonymous" else 403)
        assert PipelineRun.objects.filter(task=task).count() == 0


@pytest.mark.parametrize("persona", PERSONAS)
def test_only_owners_and_admins_may_read_a_pipeline_job(persona, client_for, personas, task):
    from rounds import services

    run = services.start_pipeline(task, personas.owner)
    response = client_for(persona).get(f"/api/jobs/{run.pk}/")
    expected = 200 if persona in ALLOWED else (401 if persona == "anonymous" else 403)
    assert response.status_code == expected


@pytest.mark.parametrize("persona", PERSONAS)
def test_only_owners_and_admins_may_retry_a_failed_job(persona, client_for, personas, task):
    from rounds import services

    run = services.start_pipeline(task, personas.owner)
    PipelineRun.objects.filter(pk=run.pk).update(status="failed")
    response = client_for(persona).post(f"/api/jobs/{run.pk}/retry/")
    expected = 202 if persona in ALLOWED else (401 if persona == "anonymous" else 403)
    assert response.status_code == expected


@pytest.mark.parametrize("persona", PERSONAS)
def test_the_console_page_is_for_owners_and_admins(persona, personas, task, client):
    user = personas.get(persona)
    if user is not None:
        client.force_login(user)
    response = client.get("/tasks/small/console/")
    if persona in ALLOWED:
        assert response.status_code == 200
    elif persona == "anonymous":
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    else:
        assert response.status_code == 403


@pytest.mark.parametrize("persona", PERSONAS)
def test_leaderboard_and_dashboard_are_readable_by_everyone_who_sees_the_task(persona, client_for, task):
    client = client_for(persona)
    assert client.get("/api/tasks/small/leaderboard/").status_code == 200
    assert client.get("/api/tasks/small/dashboard/").status_code == 200
    assert client.get("/api/tasks/small/rounds/").status_code == 200


def test_a_hidden_task_figures_are_not_found_for_outsiders(client_for, task):
    task.visibility = "hidden"
    task.save()
    assert client_for("outsider").get("/api/tasks/small/leaderboard/").status_code == 404
    assert client_for("owner").get("/api/tasks/small/leaderboard/").status_code == 200


def test_service_refuses_a_non_owner(personas, task):
    from django.core.exceptions import PermissionDenied

    from rounds import services

    with pytest.raises(PermissionDenied, match="owners and admins"):
        services.start_pipeline(task, personas.researcher)
