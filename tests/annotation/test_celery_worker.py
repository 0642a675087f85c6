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

from annotation.models import Example
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


@pytest.fixture
def worker(settings, tiny_store, tmp_path):
    """A real `celery worker --pool=solo` on its own queue; the app in this process sends to it."""
    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the test database, which needs PostgreSQL (DATABASE_URL)")
    from dynabench_site.celery import app

    queue = f"annotation-test-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    env = {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": BROKER, "CELERY_RESULT_BACKEND": BROKER,
           "CELERY_QUEUE": queue, "MODEL_STORE": str(tiny_store), "MODEL_BACKEND": "inprocess", "C_FORCE_ROOT": "1"}
    command = [str(Path(sys.executable).with_name("celery")), "-A", "dynabench_site", "worker", "--pool=solo",
               "-Q", queue, "-n", f"{queue}@%h", "--loglevel=info", "--without-gossip", "--without-mingle"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   cwd=django_settings.BASE_DIR, start_new_session=True)
    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager", "task_default_queue", "result_backend")}
    try:
        wait_for(lambda: b"ready." in log.read_bytes() or process.poll() is not None, 90, "the worker", log)
        assert process.poll() is None, log.read_text()
        send_to(app, settings, broker=BROKER, eager=False, queue=queue)
        yield log
    finally:
        send_to(app, settings, broker=saved["broker_url"], eager=saved["task_always_eager"],
                queue=saved["task_default_queue"], backend=saved["result_backend"])
        stop(process)
        purge(queue)


def send_to(app, settings, *, broker, eager: bool, queue: str, backend=None) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = eager
    app.conf.update(broker_url=broker, task_always_eager=eager, task_default_queue=queue,
                    result_backend=backend or broker)
    app._pool = None  # forget connections to the previous broker
    app.amqp._producer_pool = None


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
