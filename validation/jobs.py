"""Celery jobs of validation: thin wrappers over the queue service (idempotent)."""

from __future__ import annotations

from celery import shared_task

from validation import queue


@shared_task(name="validation.purge_expired_leases")
def purge_expired_leases() -> int:
    return queue.purge_expired()


@shared_task(name="validation.sync_queue")
def sync_queue() -> int:
    return queue.sync_queue()
