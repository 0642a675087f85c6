"""The submission request waits for its verdict on Redis (the cache of every scale-out deployment), not by
polling the database: whoever settles the example wakes it, and it reads the row about once a second at most.
Without Redis, or with Redis down, it polls the row and still answers."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation import jobs, scoring
from annotation.models import Example
from tests.factories import ExampleFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_cache(settings):
    """The default cache on the machine's real Redis (a database and a key prefix of this test's own)."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:6379/8", "KEY_PREFIX": uuid.uuid4().hex[:12]}}
    settings.CELERY_TASK_ALWAYS_EAGER = False
    from django.core.cache import caches

    caches["default"].set("probe", 1)  # Redis must answer: this test is about it
    yield caches["default"]


@pytest.fixture
def pending():
    return ExampleFactory(scoring_state=Example.Scoring.PENDING, fooled=None, ensemble_prediction=None)


def settle_later(example_id: int, delay: float, how: str) -> threading.Thread:
    """Another process's worker, as a thread: after `delay`, store a verdict (or mark the job delayed)."""

    def work() -> None:
        time.sleep(delay)
        try:
            if how == "verdict":
                Example.objects.filter(pk=example_id).update(
                    scoring_state=Example.Scoring.SCORED, fooled=False, scored_at=timezone.now(),
                    ensemble_prediction={"label": "positive", "probs": {"positive": 0.9, "negative": 0.1}})
                scoring.announce_settled(example_id)
            else:
                jobs.mark_delayed(example_id, ConnectionError("broker down"))
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    return thread


@pytest.mark.parametrize("how", ["verdict", "delayed"])
def test_the_wait_ends_when_the_example_is_settled_and_reads_the_row_rarely(redis_cache, pending, how):
    thread = settle_later(pending.pk, 0.8, how)
    with CaptureQueriesContext(connection) as queries:
        example = scoring.await_verdict(pending, timeout=10)
    thread.join()
    if how == "verdict":
        assert example.scoring_state == Example.Scoring.SCORED and example.fooled is False
    else:
        assert example.scoring_state == Example.Scoring.PENDING and example.scoring_delayed
    # One read at the start and one when woken (polling would read it every 20-250 ms: a dozen times here).
    assert len(queries) <= 3, [q["sql"] for q in queries]


def test_a_wait_that_nobody_ends_reads_the_row_about_once_a_second(redis_cache, pending):
    with CaptureQueriesContext(connection) as queries:
        example = scoring.await_verdict(pending, timeout=2.5)
    assert example.scoring_state == Example.Scoring.PENDING
    assert 2 <= len(queries) <= 5, [q["sql"] for q in queries]


def test_without_redis_the_wait_polls_the_row(settings, pending):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # the test settings' cache is local memory: no channel
    thread = settle_later(pending.pk, 0.5, "verdict")
    example = scoring.await_verdict(pending, timeout=10)
    thread.join()
    assert example.scoring_state == Example.Scoring.SCORED


def test_with_redis_down_the_wait_polls_the_row(redis_down, settings, pending):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    thread = settle_later(pending.pk, 0.5, "verdict")  # its announcement fails quietly: Redis is down
    example = scoring.await_verdict(pending, timeout=10)
    thread.join()
    assert example.scoring_state == Example.Scoring.SCORED


def test_a_stored_verdict_reaches_the_waiting_request_without_a_read_of_the_row(redis_cache, pending):
    """The wake-up of a stored verdict carries the columns it wrote (issue 27: the submission's wait costs a cache
    read, not a database round trip). A request that just saved its example reads nothing at all."""
    from annotation.scoring import _store_verdict

    def work() -> None:
        time.sleep(0.5)
        try:
            token = scoring.claim(Example.objects.select_related("round__task", "context").get(pk=pending.pk))
            example = Example.objects.select_related("round__task", "context").get(pk=pending.pk)
            verdict = {"ensemble": {"label": "negative", "probs": {"positive": 0.2, "negative": 0.8}},
                       "models": [{"model_version": 1, "prediction": {"label": "negative"}}], "model_versions": [1]}
            assert _store_verdict(example, token, verdict) == scoring.Outcome.SCORED
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    with CaptureQueriesContext(connection) as queries:
        example = scoring.await_verdict(pending, timeout=10, fresh=True)
    thread.join()
    assert [q["sql"] for q in queries] == []
    stored = Example.objects.get(pk=pending.pk)
    assert example.scoring_state == stored.scoring_state == Example.Scoring.SCORED
    for name in ("fooled", "ensemble_prediction", "model_predictions", "model_versions", "scored_at",
                 "scoring_attempts", "explanation_state", "scoring_error"):
        assert getattr(example, name) == getattr(stored, name), name
