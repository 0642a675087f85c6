"""The Celery app, and what every worker does besides running jobs.

- At start-up a worker queues the pending sweep (`annotation.score_pending`): examples saved while the broker
  was down, or whose worker was killed, are scored without waiting for beat.
- Every WORKER_HEARTBEAT_SECONDS a worker writes a heartbeat key into the broker's Redis
  (`dynabench:worker:<hostname>`, expiring after three beats); `/healthz` lists the workers seen recently.

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

log = logging.getLogger(__name__)
HEARTBEAT_PREFIX = "dynabench:worker:"


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

    def start(self, worker):
        self.client = heartbeat_client()
        if self.client is None:
            return
        self.beat()
        self.tref = worker.timer.call_repeatedly(heartbeat_seconds(), self.beat)

    def beat(self):
        try:
            self.client.set(HEARTBEAT_PREFIX + self.hostname, f"{time.time():.3f}", ex=3 * heartbeat_seconds())
        except Exception as exc:  # the broker is down: the worker itself reconnects; the next beat tries again
            log.debug("heartbeat not written: %s", exc)

    def stop(self, worker):
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None
        if self.client is not None:
            with contextlib.suppress(Exception):  # a broker that is down forgets it after three beats anyway
                self.client.delete(HEARTBEAT_PREFIX + self.hostname)


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
