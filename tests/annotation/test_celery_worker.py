"""End to end through a real Celery worker on the machine's Redis, with PostgreSQL shared with the worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from annotation.models import Example
from tests import celeryconf
from tests.annotation.conftest import sentiment_body

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BROKER = "redis://127.0.0.1:6379/9"  # a database of its own, so nothing else's queues are touched


def database_url() -> str:
    db = connection.settings_dict
    user, host, port = db.get("USER") or "postgres", db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def wait_for(predicate, timeout: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{tail}")


def start_worker(queue: str, log: Path, tiny_store, maps: bool = True, **extra_env: str) -> subprocess.Popen:
    """A solo worker on `queue` (verdicts and every other job) and, with `maps`, on its maps queue too."""
    env = {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": BROKER, "CELERY_RESULT_BACKEND": BROKER,
           "CELERY_QUEUE": queue, "MODEL_STORE": str(tiny_store), "MODEL_BACKEND": "inprocess", "C_FORCE_ROOT": "1",
           **extra_env}
    command = [str(Path(sys.executable).with_name("celery")), "-A", "dynabench_site", "worker", "--pool=solo",
               "-Q", f"{queue},{queue}-maps" if maps else queue, "-n", f"{queue}@%h", "--loglevel=info", "--without-gossip", "--without-mingle"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   cwd=django_settings.BASE_DIR, start_new_session=True)
    wait_for(lambda: b"ready." in log.read_bytes() or process.poll() is not None, 90, "the worker", log)
    assert process.poll() is None, log.read_text()
    return process


@pytest.fixture
def queue_on_redis(settings):
    """The app in this process sends its jobs to a queue of its own on Redis (no worker yet)."""
    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the test database, which needs PostgreSQL (DATABASE_URL)")
    from dynabench_site.celery import app

    queue = f"annotation-test-{uuid.uuid4().hex[:8]}"
    eager = settings.CELERY_TASK_ALWAYS_EAGER
    saved = send_to(app, settings, broker=BROKER, eager=False, queue=queue)
    try:
        yield queue
    finally:
        settings.CELERY_TASK_ALWAYS_EAGER = eager
        celeryconf.restore(saved)
        app._pool = None
        app.amqp._producer_pool = None
        purge(queue)
        purge(f"{queue}-maps")


@pytest.fixture
def worker(queue_on_redis, tiny_store, tmp_path):
    """A real `celery worker --pool=solo` on its own queue; the app in this process sends to it."""
    log = tmp_path / "worker.log"
    process = start_worker(queue_on_redis, log, tiny_store)
    try:
        yield log
    finally:
        stop(process)


def send_to(app, settings, *, broker, eager: bool, queue: str, backend=None, routes=None) -> dict:
    """Point this process's app at `broker` and `queue`; returns what celeryconf.restore puts back."""
    settings.CELERY_TASK_ALWAYS_EAGER = eager
    routes = routes if routes is not None else {"annotation.explain_example": {"queue": f"{queue}-maps"}}
    saved = celeryconf.update(broker_url=broker, task_always_eager=eager, task_default_queue=queue,
                              result_backend=backend or broker, task_routes=routes)
    app._pool = None  # forget connections to the previous broker
    app.amqp._producer_pool = None
    return saved


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def purge(queue: str) -> None:
    import redis

    client = redis.Redis.from_url(BROKER)
    client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")


def scored(example_id: int) -> bool:
    return Example.objects.get(pk=example_id).scoring_state == Example.Scoring.SCORED


def test_a_submission_is_scored_by_the_celery_worker(worker, writer_api, sentiment, deploy):
    task, round, context = sentiment
    deploy(round)
    response = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert response.status_code in (201, 202), response.content
    example_id = response.data["id"]
    wait_for(lambda: scored(example_id), 60, "the worker's verdict", worker)
    data = writer_api.get(f"/api/examples/{example_id}/").data
    assert isinstance(data["fooled"], bool) and len(data["model_predictions"]) == 2
    assert "annotation.score_example" in worker.read_text()
    # The word map follows in a job of its own, on the same worker.
    wait_for(lambda: Example.objects.get(pk=example_id).explanation_state == "ready", 60, "the word map", worker)
    data = writer_api.get(f"/api/examples/{example_id}/").data
    assert data["explanation"]["words"] and data["explanation"]["members"] == 2


def test_a_verdict_never_waits_behind_word_maps(queue_on_redis, tiny_store, tmp_path, writer_api, sentiment, deploy):
    """Maps queued first, a verdict after them, and only the verdicts' worker running: the verdict is scored while
    the maps wait on their own queue for the explainer."""
    import redis

    task, round, context = sentiment
    deploy(round)
    from annotation import jobs

    earlier = []
    for i in range(3):  # three scored examples whose maps wait in their queue
        body = sentiment_body(context)
        body["input"] = {"text": f"An earlier example number {i}, quite good."}
        earlier.append(writer_api.post(f"/api/tasks/{task.slug}/examples/", body, format="json").data["id"])
    Example.objects.filter(pk__in=earlier).update(scoring_state="scored", ensemble_prediction={"label": "positive"},
                                                  explanation_state="pending", explanation_queued_at=timezone.now())
    for pk in earlier:
        jobs.enqueue_map(pk)
    maps_queue = redis.Redis.from_url(BROKER)
    assert maps_queue.llen(f"{queue_on_redis}-maps") >= 3
    response = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    verdict_id = response.data["id"]
    log = tmp_path / "worker.log"
    process = start_worker(queue_on_redis, log, tiny_store, maps=False)
    try:
        wait_for(lambda: scored(verdict_id), 60, "the verdict", log)
    finally:
        stop(process)
    assert "annotation.explain_example[" not in log.read_text()  # never received by the verdicts' worker
    assert maps_queue.llen(f"{queue_on_redis}-maps") == 4  # the three earlier maps and the new verdict's map


def test_the_worker_retries_with_backoff_until_models_are_deployed(worker, writer_api, sentiment, deploy):
    task, round, context = sentiment  # no ensemble yet: the first attempt fails (retryable)
    response = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    example_id = response.data["id"]
    wait_for(lambda: Example.objects.get(pk=example_id).scoring_attempts >= 1, 60, "a first attempt", worker)
    assert Example.objects.get(pk=example_id).scoring_state == "pending"
    deploy(round)
    wait_for(lambda: scored(example_id), 60, "the verdict after recovery", worker)
    assert Example.objects.get(pk=example_id).scoring_attempts >= 2
    assert "Retry in" in worker.read_text()


def test_a_worker_keeps_its_database_connection_from_job_to_job(queue_on_redis, tiny_store, tmp_path, writer_api,
                                                                 sentiment, deploy):
    """With persistent connections (DB_CONN_MAX_AGE, as every scale-out deployment sets it), a worker does not open a
    PostgreSQL connection per job (Celery's Django fix-up would, costing a new backend twice per verdict): the
    connection that scored the first example scores the last one too."""
    task, round, context = sentiment
    deploy(round)
    log = tmp_path / "worker.log"
    process = start_worker(queue_on_redis, log, tiny_store, maps=False, DB_CONN_MAX_AGE="60")
    others = ("SELECT pid, backend_start FROM pg_stat_activity WHERE datname = current_database() "
              "AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
    seen = []
    try:
        for i in range(4):
            body = {**sentiment_body(context), "input": {"text": f"Job number {i} of the same worker, fine."}}
            example_id = writer_api.post(f"/api/tasks/{task.slug}/examples/", body, format="json").data["id"]
            wait_for(lambda pk=example_id: scored(pk), 60, "the worker's verdict", log)
            with connection.cursor() as cursor:
                cursor.execute(others)
                seen.append(sorted(cursor.fetchall()))
    finally:
        stop(process)
    # The worker's job connection is open after its first job and is the same one after every later job. (The
    # model-warmer thread of the same worker opens a connection of its own while it polls, then closes it: a snapshot
    # may catch it, so the rule is on the backend every snapshot shares.)
    kept = set(seen[0]).intersection(*map(set, seen[1:]))
    assert len(kept) == 1, seen
    assert all(len(backends) <= 2 for backends in seen), seen  # never a connection per job piling up
