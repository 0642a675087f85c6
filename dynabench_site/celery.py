"""The Celery app, and what every worker does besides running jobs.

- At start-up a worker queues the pending sweep (`annotation.score_pending`): examples saved while the broker
  was down, or whose worker was killed, are scored without waiting for beat.
- Every WORKER_HEARTBEAT_SECONDS a worker writes a heartbeat key into the broker's Redis
  (`dynabench:worker:<hostname>`, expiring after three beats); `/healthz` lists the workers seen recently. It
  also writes one key per queue it consumes (`dynabench:queue:<queue>:<hostname>`), so a job waiting on a queue
  of its own (a round's retraining on "training", served by GPU workers) can say whether any worker serves it
  (`workers_on`).

The periodic sweeps themselves (pending scoring, expired leases, validation queue sync, reliability, badges)
are `CELERY_BEAT_SCHEDULE` in settings, run by `celery -A dynabench_site beat`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time

from celery import Celery, bootsteps
from celery.signals import task_postrun, task_prerun, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")

app = Celery("dynabench_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
# "Task" means a Dynabench task here, so Celery jobs live in each app's jobs.py.
app.autodiscover_tasks(related_name="jobs")
# The training job (a round's retraining on the GPU workers' queue) lives beside the trainer backends.
app.autodiscover_tasks(["modelzoo"], related_name="trainers")

log = logging.getLogger(__name__)
HEARTBEAT_PREFIX = "dynabench:worker:"
QUEUE_PREFIX = "dynabench:queue:"


def heartbeat_seconds() -> int:
    from django.conf import settings

    return int(settings.WORKER_HEARTBEAT_SECONDS)


def heartbeat_client():
    """A Redis client on the broker's Redis, or None when the broker is not Redis."""
    from django.conf import settings

    url = settings.CELERY_BROKER_URL or ""
    if not url.startswith(("redis://", "rediss://")):
        return None
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)


class Heartbeat(bootsteps.StartStopStep):
    """Writes `dynabench:worker:<hostname>` = time.time() into the broker's Redis every few seconds."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs):
        self.tref = None
        self.hostname = getattr(worker, "hostname", None) or socket.gethostname()
        self.client = None
        self.queues: list[str] = []

    def start(self, worker):
        self.client = heartbeat_client()
        if self.client is None:
            return
        with contextlib.suppress(Exception):  # the queues this worker consumes (-Q), for `workers_on`
            self.queues = sorted(worker.app.amqp.queues.consume_from)
        self.beat()
        self.tref = worker.timer.call_repeatedly(heartbeat_seconds(), self.beat)

    def beat(self):
        try:
            now, ttl = f"{time.time():.3f}", 3 * heartbeat_seconds()
            self.client.set(HEARTBEAT_PREFIX + self.hostname, now, ex=ttl)
            for queue in self.queues:
                self.client.set(f"{QUEUE_PREFIX}{queue}:{self.hostname}", now, ex=ttl)
        except Exception as exc:  # the broker is down: the worker itself reconnects; the next beat tries again
            log.debug("heartbeat not written: %s", exc)

    def stop(self, worker):
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None
        if self.client is not None:
            with contextlib.suppress(Exception):  # a broker that is down forgets it after three beats anyway
                self.client.delete(HEARTBEAT_PREFIX + self.hostname,
                                   *(f"{QUEUE_PREFIX}{queue}:{self.hostname}" for queue in self.queues))


def workers_on(queue: str) -> list[str] | None:
    """The workers that consume `queue` and reported within their last three heartbeats (hostnames), or None
    when that cannot be known (the broker is not Redis, or Redis does not answer)."""
    client = heartbeat_client()
    if client is None:
        return None
    prefix = f"{QUEUE_PREFIX}{queue}:"
    try:
        return sorted(key.decode()[len(prefix):] for key in client.scan_iter(match=prefix + "*", count=100))
    except Exception:
        return None


app.steps["worker"].add(Heartbeat)


@worker_ready.connect
def sweep_at_start(sender=None, **kwargs):
    """A worker that starts (or restarts after a crash) queues the pending-scoring sweep once."""
    try:
        app.send_task("annotation.score_pending")
    except Exception as exc:  # pragma: no cover - the broker vanished between start-up and now
        log.warning("pending sweep not queued at worker start: %s", exc)


@task_prerun.connect
@task_postrun.connect
def close_old_connections_around_jobs(sender=None, **kwargs):
    """A job starts and ends as a web request does: database connections past DB_CONN_MAX_AGE, or left unusable
    by an error (PostgreSQL restarted), are closed; the others are kept (settings.CELERY_DB_REUSE_MAX)."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return  # inline, in a request or a command: its connection is the caller's
    from django.db import close_old_connections

    close_old_connections()
