"""Celery jobs of the create flow: thin wrappers over annotation.scoring."""

from __future__ import annotations

import logging

from celery import shared_task

from annotation import scoring

log = logging.getLogger(__name__)


@shared_task(bind=True, name="annotation.score_example", acks_late=True, max_retries=None, ignore_result=True)
def score_example(self, example_id: int) -> str:
    """Score one saved example; on a retryable serving error, retry with exponential backoff.

    Inline (no broker) there is no one to wait for a countdown: the example stays pending and the
    writer's next poll, or `manage.py score_pending`, retries it once its backoff has passed.
    """
    try:
        return scoring.score_example(example_id).value
    except scoring.ScoringDeferred as deferred:
        if self.request.is_eager or deferred.attempts >= scoring.max_retries():
            return "deferred"
        raise self.retry(countdown=scoring.backoff_seconds(deferred.attempts), exc=deferred) from deferred


@shared_task(name="annotation.score_pending", ignore_result=True)
def score_pending(limit: int = 500) -> int:
    """Re-enqueue pending examples whose retry is due (e.g. from a periodic schedule)."""
    return scoring.sweep_pending(limit)
