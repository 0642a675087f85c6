"""Recovery: pending examples whose retry is due, re-queued by a poll from the writer's page or by the sweep.

A retryable serving error keeps the example pending and is tried again with exponential backoff (capped at
SCORING_RETRY_MAX_SECONDS); an example whose job could not be queued (broker down) is pending with
`scoring_delayed` set and due at once. The pending sweep (Celery beat, and every worker at start-up:
`annotation.jobs.score_pending`) queues whatever is due, and an owner asks for failed ones again from the console's
health page (`pending_examples(include_failed=True)`).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from annotation.models import Example
from annotation.scoring.common import backoff_seconds, retry_base_seconds, stale_seconds


def first_attempt_grace() -> float:
    """How long a never-attempted example waits before a poll re-enqueues it (a worker may have a backlog)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return max(retry_base_seconds(), 1.0)
    return stale_seconds()


def is_due(example: Example, now=None, slack: float = 0.0) -> bool:
    """A pending example whose last attempt (or whose saving) lies longer ago than its backoff (+ `slack`
    seconds once it was tried: its own retry may still be on its way). One whose job could not be queued
    (`scoring_delayed`) is due at once."""
    if example.scoring_state != Example.Scoring.PENDING:
        return False
    if example.scoring_delayed:
        return True
    now = now or timezone.now()
    attempts = example.scoring_attempts
    wait = backoff_seconds(attempts) + slack if attempts else first_attempt_grace()
    return example.updated_at + timedelta(seconds=wait) <= now


def sweep_slack() -> float:
    """What the periodic sweep adds to a tried example's backoff before queueing it again: with workers, its
    retry is normally queued already (a Celery countdown), and only one whose worker vanished (kill -9) needs
    the sweep; inline, nothing else retries it."""
    return 0.0 if settings.CELERY_TASK_ALWAYS_EAGER else stale_seconds()


def claim_revival(example: Example, slack: float = 0.0) -> bool:
    """Take the right to re-enqueue a pending example whose retry is due (a poll from the page, or the sweep).

    The conditional touch of `updated_at` lets only one of many concurrent polls win, and restarts the
    backoff clock, so polling never floods the queue. The winner enqueues (`annotation.jobs.revive_if_due`).
    """
    if not is_due(example, slack=slack):
        return False
    return bool(Example.objects.filter(
        pk=example.pk, scoring_state=Example.Scoring.PENDING, updated_at=example.updated_at
    ).update(updated_at=timezone.now()))


def pending_examples(limit: int = 500, include_failed: bool = False) -> list[Example]:
    """Pending examples, longest waiting first (and, on request, failed ones turned pending again)."""
    if include_failed:
        Example.objects.filter(scoring_state=Example.Scoring.FAILED).update(
            scoring_state=Example.Scoring.PENDING, scoring_attempts=0, scoring_delayed=False,
            updated_at=timezone.now() - timedelta(days=1)
        )
    return list(Example.objects.filter(scoring_state=Example.Scoring.PENDING).order_by("updated_at")[:limit])
