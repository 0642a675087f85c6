"""Celery jobs of the create flow (thin wrappers over annotation.scoring), and how they are queued."""

from __future__ import annotations

from celery import shared_task

from annotation import scoring
from annotation.models import Example
from dynabench_site.jobs import dispatch


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
    return sweep_pending(limit)


def enqueue_scoring(example_id: int) -> None:
    """Score the example once the current transaction commits: inline in the embedded default, on a worker
    with a broker. A broker that is down leaves it pending; `score_pending` or the writer's next poll
    picks it up."""
    dispatch(score_example, example_id)


def revive_if_due(example: Example) -> bool:
    """Re-enqueue a pending example whose retry is due; only one of many concurrent polls does."""
    if not scoring.claim_revival(example):
        return False
    enqueue_scoring(example.pk)
    return True


def sweep_pending(limit: int = 500, include_failed: bool = False) -> int:
    """Re-enqueue due pending examples (and, on request, failed ones); returns how many."""
    return sum(revive_if_due(example) for example in scoring.pending_examples(limit, include_failed))


def score_pending_of_round(round_id: int) -> int:
    """Queue every pending example of a round for scoring now, whatever its backoff: its round just got an
    ensemble (e.g. the demo models finished training in the background). `scoring.claim` keeps it to one
    verdict per example even if a poll queues it too. Returns how many."""
    ids = list(Example.objects.filter(round_id=round_id, scoring_state=Example.Scoring.PENDING)
               .order_by("created_at").values_list("pk", flat=True))
    for example_id in ids:
        enqueue_scoring(example_id)
    return len(ids)
