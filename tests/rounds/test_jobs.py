"""One way to queue a job (`dynabench_site.jobs.dispatch`): where each job runs, what happens when it cannot be
queued, and the command that runs a job in a process of its own."""

from __future__ import annotations

import time

import pytest
from django.core.management import CommandError, call_command

from annotation.jobs import score_example
from dynabench_site import jobs
from rounds import jobs as rounds_jobs
from rounds import services
from rounds.models import PipelineRun
from tests.factories import UserFactory


@pytest.fixture
def owner(small_task):
    user = UserFactory(username="boss")
    small_task.owners.add(user)
    return user


@pytest.mark.parametrize(
    ("runner", "embedded", "short", "long"),
    [
        ("", True, "inline", "subprocess"),  # the embedded default: a web request never trains
        ("", False, "celery", "celery"),  # with a broker, every job goes to a worker
        ("thread", True, "inline", "thread"),
        ("inline", True, "inline", "inline"),
        ("celery", True, "celery", "celery"),
    ],
)
def test_short_jobs_run_inline_and_long_jobs_elsewhere_unless_a_broker_takes_all(settings, runner, embedded, short, long):
    settings.JOB_RUNNER, settings.CELERY_TASK_ALWAYS_EAGER = runner, embedded
    assert jobs.runner_for(score_example) == short
    assert jobs.runner_for(rounds_jobs.run_pipeline) == jobs.runner_for(rounds_jobs.evaluate_upload) == long


def test_run_job_runs_a_queued_pipeline_in_the_foreground(small_task, owner, settings):
    settings.JOB_RUNNER = ""  # queued after commit, which this test's transaction never does
    run = services.start_pipeline(small_task, owner)
    assert PipelineRun.objects.get(pk=run.pk).status == "pending"
    call_command("run_job", "rounds.run_pipeline", str(run.pk))
    assert PipelineRun.objects.get(pk=run.pk).status == "done"
    assert small_task.current_round.number == 2


def test_run_job_names_the_jobs_it_knows_when_asked_for_another():
    with pytest.raises(CommandError, match="unknown job 'rounds.run_job'.*rounds.evaluate_upload.*rounds.run_pipeline"):
        call_command("run_job", "rounds.run_job", "pipeline", "1")


def test_a_pipeline_that_cannot_be_queued_fails_and_can_be_retried(
    small_task, owner, broker_down, django_capture_on_commit_callbacks
):
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_pipeline(small_task, owner)
    assert time.monotonic() - started < 30
    run.refresh_from_db()
    assert run.status == "failed" and run.error.startswith("could not enqueue: ")
    with django_capture_on_commit_callbacks(execute=True):
        services.retry_pipeline(run, owner)  # still down: failed again, with the reason, never pending for ever
    run.refresh_from_db()
    assert run.status == "failed" and "could not enqueue" in run.error


@pytest.mark.integration
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_in_the_embedded_default_the_pipeline_runs_in_a_process_of_its_own(small_task, owner, settings, monkeypatch,
                                                                          tmp_path):
    """The request that starts a pipeline returns at once; a `manage.py run_job` process does the training."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the job's process shares the test database, which needs PostgreSQL (DATABASE_URL)")
    db = connection.settings_dict
    url = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    if db.get("PASSWORD"):
        url = url.replace("@", f":{db['PASSWORD']}@", 1)
    settings.JOB_RUNNER, settings.VAR_DIR = "", tmp_path
    for name, value in {"DATABASE_URL": url, "MODEL_STORE": str(settings.MODEL_STORE), "VAR_DIR": str(tmp_path),
                        "MODEL_BACKEND": "inprocess"}.items():
        monkeypatch.setenv(name, value)
    started = time.monotonic()
    run = services.start_pipeline(small_task, owner)
    assert time.monotonic() - started < 5 and run.runner == "subprocess"
    deadline = time.monotonic() + 300
    while PipelineRun.objects.get(pk=run.pk).status in ("pending", "running") and time.monotonic() < deadline:
        time.sleep(0.5)
    log = "\n".join(p.read_text(errors="replace")[-3000:] for p in (tmp_path / "logs").glob("*.log"))
    assert PipelineRun.objects.get(pk=run.pk).status == "done", log
    assert small_task.current_round.number == 2
