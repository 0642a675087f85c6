"""Celery jobs of validation: thin wrappers over the queue service (idempotent)."""

from __future__ import annotations

from celery import shared_task

from tasks.models import Task
from validation import queue, reliability


@shared_task(name="validation.purge_expired_leases")
def purge_expired_leases() -> int:
    return queue.purge_expired()


@shared_task(name="validation.sync_queue")
def sync_queue() -> int:
    return queue.sync_queue()


@shared_task(name="validation.refresh_reliability")
def refresh_reliability() -> int:
    """Re-estimate reliability-weighted labels of every task whose votes changed (exports also refresh first)."""
    for task in Task.objects.all():
        reliability.refresh(task)
    return Task.objects.count()
