"""Scoring under faults, in process with real tiny models: the broker down ("scoring delayed", still 202 and
saved), giving up after SCORING_MAX_RETRIES (a visible `failed` the owner retries from the health page), and a
model server's 409 taken as "try again". The same faults against the whole production path: tests/prod."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation import jobs, scoring
from annotation.models import Example
from tests.annotation.conftest import closed_port, sentiment_body
from tests.factories import UserFactory
from zoo.serving.torchserve import TorchServeError

pytestmark = pytest.mark.django_db(transaction=True)




def post(client, task, body):
    return client.post(f"/api/tasks/{task.slug}/examples/", body, format="json")


@pytest.fixture
def broker_down(settings):
    """Jobs go to a Redis broker where nothing listens (the real client gets connection refused)."""
    from dynabench_site.celery import app

    url = f"redis://127.0.0.1:{closed_port()}/0"
    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager", "result_backend")}

    def point(broker, eager, backend):
        settings.CELERY_BROKER_URL = broker
        settings.CELERY_TASK_ALWAYS_EAGER = eager
        app.conf.update(broker_url=broker, task_always_eager=eager, result_backend=backend)
        app._pool = None
        app.amqp._producer_pool = None

    point(url, False, "cache+memory://")
    yield lambda: point(saved["broker_url"], saved["task_always_eager"], saved["result_backend"])
    point(saved["broker_url"], saved["task_always_eager"], saved["result_backend"])




def test_broker_down_the_submission_is_saved_and_answered_202_scoring_delayed(
        writer_api, sentiment, deploy, broker_down, redis_down):
    task, round, context = sentiment
    deploy(round)
    response = post(writer_api, task, sentiment_body(context))  # the cache (rate limits) is down too
    assert response.status_code == 202, response.content
    data = response.data
    assert data["scoring_state"] == "pending" and data["scoring_delayed"] is True and data["fooled"] is None
    assert data["scoring_error"].startswith("scoring delayed: the job queue is unreachable")
    example = Example.objects.get()
    assert example.scoring_delayed and example.scoring_attempts == 0

    # The writer's page keeps polling: still answered, still delayed, nothing lost.
    poll = writer_api.post(f"/api/examples/{example.pk}/score/")
    assert poll.status_code == 200 and poll.data["scoring_delayed"] is True

    broker_down()  # the queue is back (inline here); the sweep takes delayed examples at once, no grace period
    assert jobs.score_pending() == 1
    example.refresh_from_db()
    assert example.scoring_state == "scored" and not example.scoring_delayed and example.scoring_error == ""
    assert isinstance(example.fooled, bool)


def test_after_the_last_try_the_example_is_failed_and_the_owner_retries_it(
        writer_api, writer, sentiment, deploy, outage, settings):
    task, round, context = sentiment
    deploy(round)
    outage.start()
    settings.SCORING_MAX_RETRIES = 2
    settings.SCORING_RETRY_BASE_SECONDS = 0
    response = post(writer_api, task, sentiment_body(context))
    assert response.status_code == 202 and response.data["scoring_attempts"] == 1
    example_id = response.data["id"]
    data = writer_api.post(f"/api/examples/{example_id}/score/").data  # the second and last try
    assert data["scoring_state"] == "failed" and data["scoring_attempts"] == 2
    assert data["scoring_error"].startswith("gave up after 2 tries: TorchServe unreachable")
    assert jobs.score_pending() == 0  # the sweep leaves a failed example alone: nothing retries it for ever

    owner = UserFactory(username="task-owner")
    task.owners.add(owner)
    page = Client()
    page.force_login(owner)
    health = page.get(f"/tasks/{task.slug}/console/health/").content.decode()
    assert "could not be scored" in health and f"#{example_id}" in health and "gave up after 2 tries" in health

    # Only the task's owners may ask again.
    writer_page = Client()
    writer_page.force_login(writer)
    assert writer_page.post(f"/tasks/{task.slug}/console/health/scoring/retry/", {"example": example_id}).status_code == 403
    assert Example.objects.get(pk=example_id).scoring_state == "failed"

    outage.end()  # the model server is back
    answer = page.post(f"/tasks/{task.slug}/console/health/scoring/retry/", {"example": example_id}, follow=True)
    assert answer.status_code == 200 and "Scoring asked again for 1 example(s) (1 failed, 0 stuck)" in answer.content.decode()
    example = Example.objects.get(pk=example_id)
    assert example.scoring_state == "scored" and example.scoring_attempts == 1 and example.scoring_error == ""
    again = page.get(f"/tasks/{task.slug}/console/health/").content.decode()
    assert f"#{example_id}" not in again and "No scoring failures in this task." in again


def test_retrying_an_example_that_is_not_failed_or_stuck_says_so(writer_api, sentiment, deploy):
    task, round, context = sentiment
    deploy(round)
    example_id = post(writer_api, task, sentiment_body(context)).data["id"]  # scored at once
    owner = UserFactory(username="task-owner")
    task.owners.add(owner)
    page = Client()
    page.force_login(owner)
    answer = page.post(f"/tasks/{task.slug}/console/health/scoring/retry/", {"example": example_id}, follow=True)
    assert f"example {example_id} of this task is neither failed nor stuck" in answer.content.decode()
    assert Example.objects.get(pk=example_id).scoring_attempts == 1  # not scored again


def test_a_model_servers_409_is_tried_again_not_failed():
    conflict = TorchServeError("TorchServe POST /models answered 409: model already registered", retryable=False,
                               status=409)
    assert scoring.transient(conflict).retryable is True
    broken = TorchServeError("TorchServe answered 500: handler crashed", retryable=False, status=500)
    assert scoring.transient(broken) is broken and broken.retryable is False


def test_backoff_is_capped_so_a_server_that_is_back_is_used_soon(settings):
    settings.SCORING_RETRY_BASE_SECONDS = 2
    settings.SCORING_RETRY_MAX_SECONDS = 20
    assert [scoring.backoff_seconds(n) for n in (1, 2, 3, 4, 5, 12, 500)] == [2, 4, 8, 16, 20, 20, 20]


def test_the_sweep_leaves_a_tried_example_to_its_own_retry_until_it_is_overdue(writer, sentiment, settings):
    """With workers, a tried example's retry is already queued (a Celery countdown): the sweep only steps in
    when its worker vanished, SCORING_STALE_SECONDS after the retry was due; a delayed one it takes at once."""
    from datetime import timedelta

    from django.utils import timezone

    task, round, context = sentiment
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.SCORING_RETRY_BASE_SECONDS, settings.SCORING_STALE_SECONDS = 2, 30
    example = Example.objects.create(round=round, context=context, author=writer, input={"text": "x"},
                                     target="positive", scoring_attempts=1)
    now = timezone.now()
    Example.objects.filter(pk=example.pk).update(updated_at=now - timedelta(seconds=10))
    example.refresh_from_db()
    slack = scoring.sweep_slack()
    assert slack == 30
    assert scoring.is_due(example)  # a poll: its 2 s backoff has passed
    assert not scoring.is_due(example, slack=slack)  # the sweep: not yet, its own retry is on its way
    assert scoring.is_due(example, now=now + timedelta(seconds=25), slack=slack)  # overdue: its worker vanished
    example.scoring_delayed = True
    assert scoring.is_due(example, slack=slack)  # never queued: at once
