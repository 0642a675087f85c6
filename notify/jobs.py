"""The notification jobs: one webhook delivery (`notify.deliver`), one mail (`notify.send_mail`), and the sweep that
sends what was never queued or whose job was lost (`notify.sweep`, Celery beat every 30 s: settings).

Where they run (dynabench_site.jobs): with a broker, on the Celery workers; a try that failed is queued again with a
countdown (its backoff). In the embedded default (no broker) each runs in a daemon thread of the web process
(`background_thread`), so the request that caused the event has answered already, and that thread waits out the
backoff itself between tries. A job lost with its process (a restart while a thread waited, a worker killed) leaves
its delivery pending; the sweep queues it again once it is due. Queueing twice is harmless: a try claims its
delivery first (notify.webhooks.claim), and a delivery that is done, or not due, is left alone.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from celery import shared_task
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from dynabench_site.jobs import dispatch, runner_for
from notify import mail, webhooks
from notify.models import Delivery, Mail

log = logging.getLogger(__name__)

# A delivery due longer ago than this is taken as lost (its job never ran, or died) and queued again by the sweep.
SWEEP_GRACE_SECONDS = 30
SWEEP_LIMIT = 500


def run(attempt, pk: int, *, wait: bool) -> str:
    """Try `pk` until it is delivered, failed, or (without `wait`) due later; returns the last state."""
    while True:
        outcome = attempt(pk)
        if outcome.retry_at is None or not wait:
            return outcome.state
        if not connection.in_atomic_block:
            connection.close()  # no connection held while waiting out the backoff
        time.sleep(max(0.0, (outcome.retry_at - timezone.now()).total_seconds()))


def _go(task, attempt, pk: int) -> str:
    if task.request.is_eager:  # a thread of the web process waits out the backoff; inline (unit tests) leaves it
        return run(attempt, pk, wait=runner_for(task) == "thread")
    outcome = attempt(pk)
    if outcome.retry_at is not None:
        task.apply_async((pk,), eta=outcome.retry_at)  # lost with the broker? the sweep finds it due
    return outcome.state


@shared_task(bind=True, name="notify.deliver", acks_late=True, ignore_result=True)
def deliver(self, delivery_id: int) -> str:
    """Send one webhook delivery (one try, or in a thread every try)."""
    return _go(self, webhooks.attempt, delivery_id)


@shared_task(bind=True, name="notify.send_mail", acks_late=True, ignore_result=True)
def send_mail(self, mail_id: int) -> str:
    """Send one mail (one try, or in a thread every try)."""
    return _go(self, mail.attempt, mail_id)


# Never in the request that caused the event: in the embedded default, a thread of the web process.
deliver.background_thread = True
send_mail.background_thread = True


def due(model, now=None):
    now = now or timezone.now()
    return (model.objects.filter(status=model.Status.PENDING,
                                 next_attempt_at__lte=now - timedelta(seconds=SWEEP_GRACE_SECONDS))
            .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)).order_by("next_attempt_at"))


@shared_task(name="notify.sweep", ignore_result=True)
def sweep(limit: int = SWEEP_LIMIT) -> int:
    """Queue again every delivery and mail due for longer than SWEEP_GRACE_SECONDS (never queued, or lost)."""
    count = 0
    for model, job in ((Delivery, deliver), (Mail, send_mail)):
        for pk in due(model).values_list("pk", flat=True)[:limit]:
            dispatch(job, pk)
            count += 1
    if count:
        log.info("notify sweep: %s delivery/mail job(s) queued again", count)
    return count
