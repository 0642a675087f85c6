"""`/healthz`, `/healthz/live` and the console's health page: what they say when things work and when they do not,
and who sees what (anyone: the status and each check's; staff, by session or token: the details).
(The same checks against the running production path, with its worker and TorchServe: tests/prod.)"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from annotation.models import Example
from tests.factories import ExampleFactory, RoundFactory, TaskFactory, UserFactory

ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def anonymous() -> Client:
    return Client()


@pytest.fixture
def staff(db) -> Client:
    """An operator: the checks' details are for staff (the tests below read them; anonymous callers get the
    summary, tested at the end)."""
    client = Client()
    client.force_login(UserFactory(username="operator", is_staff=True))
    return client


@pytest.mark.django_db
def test_the_embedded_default_is_healthy(staff):
    response = staff.get("/healthz")
    assert response.status_code == 200 and response["Cache-Control"].startswith("max-age=0")
    data = response.json()
    assert data["status"] == "ok", data
    checks = data["checks"]
    assert checks["database"]["status"] == "ok"
    assert checks["broker"]["status"] == checks["workers"]["status"] == "embedded"
    assert checks["models"] == {**checks["models"], "status": "ok", "backend": "inprocess"}
    assert checks["stuck"]["scoring"] == {"pending": 0, "delayed": 0, "stuck": 0, "failed": 0}
    assert Client().get("/healthz/live").json() == {"status": "ok"}


@pytest.mark.django_db
def test_a_failed_example_makes_it_degraded_and_is_counted(staff):
    ExampleFactory(scoring_state=Example.Scoring.FAILED, scoring_error="gave up after 15 tries")
    data = staff.get("/healthz").json()
    assert data["status"] == "degraded" and data["checks"]["stuck"]["status"] == "degraded"
    assert data["checks"]["stuck"]["scoring"]["failed"] == 1


@pytest.mark.django_db
def test_no_model_server_means_nothing_can_score_503(staff, settings):
    settings.MODEL_BACKEND = "torchserve"
    settings.TORCHSERVE_URL = f"http://127.0.0.1:{closed_port()}"
    response = staff.get("/healthz")
    assert response.status_code == 503
    models = response.json()["checks"]["models"]
    assert models["status"] == "down" and "does not answer" in models["error"]


@pytest.mark.django_db
def test_a_broker_that_is_down_and_no_worker_503(staff, settings):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    response = staff.get("/healthz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["broker"]["status"] == "down" and "Connection refused" in checks["broker"]["error"]
    assert checks["workers"]["status"] == "down"
    assert checks["database"]["status"] == "ok"


def test_the_database_down_503():
    """A real process whose DATABASE_URL points at a closed port (the web process of a cut-off host)."""
    code = ("import django, json; django.setup(); from django.test import Client; r = Client().get('/healthz'); "
            "print(json.dumps({'code': r.status_code, 'body': r.json()}))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "DJANGO_"))}
    env.update(DJANGO_SETTINGS_MODULE="dynabench_site.settings",
               DATABASE_URL=f"postgres://postgres@127.0.0.1:{closed_port()}/nothing")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["code"] == 503 and answer["body"]["status"] == "down"
    assert answer["body"]["checks"]["database"]["status"] == "down"
    assert "models" not in answer["body"]["checks"]  # nothing that needs the database is asked


@pytest.mark.django_db
def test_the_owner_sees_the_service_checks_on_the_console_health_page(settings):
    task = TaskFactory(slug="sentiment", kind="sentiment")
    RoundFactory(task=task, number=1)
    owner = UserFactory(username="owner")
    task.owners.add(owner)
    page = Client()
    page.force_login(owner)
    html = page.get("/tasks/sentiment/console/health/").content.decode()
    assert 'id="site-health-report" data-status="ok"' in html
    for label in ("Database", "Job queue (broker)", "Workers", "Model server", "Stuck jobs"):
        assert f'<th scope="row">{label}</th>' in html
    assert "jobs run inline (no broker)" in html and "No example is waiting for a verdict." in html

    settings.MODEL_BACKEND = "torchserve"
    settings.TORCHSERVE_URL = f"http://127.0.0.1:{closed_port()}"
    html = page.get("/tasks/sentiment/console/health/").content.decode()
    assert 'data-status="down"' in html and "TorchServe does not answer" in html


@pytest.mark.django_db
def test_a_silent_pipeline_run_is_listed_with_a_link_to_its_job_page(staff):
    from datetime import timedelta

    from django.utils import timezone

    from rounds.models import PipelineRun

    task = TaskFactory(slug="sentiment", kind="sentiment")
    run = PipelineRun.objects.create(task=task, status=PipelineRun.Status.RUNNING,
                                     heartbeat_at=timezone.now() - timedelta(hours=2))
    stuck = staff.get("/healthz").json()["checks"]["stuck"]
    assert stuck["status"] == "degraded" and stuck["pipelines"] == [{"id": run.pk, "task": "sentiment", "status": "running"}]
    owner = UserFactory(username="owner")
    task.owners.add(owner)
    page = Client()
    page.force_login(owner)
    html = page.get("/tasks/sentiment/console/health/").content.decode()
    assert f'href="/console/jobs/{run.pk}/">job #{run.pk}</a>, sentiment: retry or abandon it there' in html


def open_private_round():
    for slug, visibility in (("public-one", "public"), ("secret-launch", "hidden")):
        RoundFactory(task=TaskFactory(slug=slug, kind="sentiment", visibility=visibility), number=1)


@pytest.mark.django_db
def test_anonymous_callers_get_the_status_and_each_checks_status_only(anonymous):
    open_private_round()
    ExampleFactory(scoring_state=Example.Scoring.FAILED, scoring_error="gave up after 15 tries")
    response = anonymous.get("/healthz")
    assert response.status_code == 200
    data = response.json()
    assert data["status"] == "degraded" and set(data) == {"status", "time", "checks"}
    assert data["checks"] == {name: {"status": status} for name, status in (
        ("database", "ok"), ("broker", "embedded"), ("workers", "embedded"), ("cache", "embedded"),
        ("models", "ok"), ("stuck", "degraded"))}
    assert "secret-launch" not in response.content.decode() and "public-one" not in response.content.decode()


@pytest.mark.django_db
def test_a_down_service_still_answers_503_to_anonymous_callers_without_its_error(anonymous, settings):
    settings.MODEL_BACKEND = "torchserve"
    settings.TORCHSERVE_URL = f"http://127.0.0.1:{closed_port()}"
    response = anonymous.get("/healthz")
    assert response.status_code == 503 and response.json()["checks"]["models"] == {"status": "down"}
    assert "TorchServe" not in response.content.decode()


@pytest.mark.django_db
def test_signed_in_people_who_are_not_staff_get_the_summary_too():
    open_private_round()
    owner = UserFactory(username="owner")  # owns a task: the console's Health page is where they see details
    client = Client()
    client.force_login(owner)
    assert "secret-launch" not in client.get("/healthz").content.decode()


@pytest.mark.django_db
def test_staff_see_the_details_by_session_or_by_token(staff):
    from accounts import tokens

    open_private_round()
    listed = {e["task"] for e in staff.get("/healthz").json()["checks"]["models"]["ensembles"]}
    assert listed == {"public-one", "secret-launch"}
    _, key = tokens.issue(UserFactory(username="monitor", is_staff=True), "uptime probe", "read", counted=False)
    by_token = Client().get("/healthz", HTTP_AUTHORIZATION=f"Token {key}").json()
    assert {e["task"] for e in by_token["checks"]["models"]["ensembles"]} == listed
    _, someones = tokens.issue(UserFactory(username="writer"), "mine", counted=False)
    assert "ensembles" not in Client().get("/healthz", HTTP_AUTHORIZATION=f"Token {someones}").json()["checks"]["models"]


@pytest.mark.django_db
def test_a_refused_token_answers_401_so_a_monitor_notices():
    response = Client().get("/healthz", HTTP_AUTHORIZATION="Token dro_not-a-real-key")
    assert response.status_code == 401 and response.json()["detail"] == "Invalid token."
