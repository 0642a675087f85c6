"""Celery jobs of the create flow (thin wrappers over annotation.scoring), and how they are queued.

A scoring job that cannot be queued (the broker is down) leaves its example pending with `scoring_delayed`
set; `score_pending` (Celery beat every SCORING_SWEEP_SECONDS, and each worker once at start-up:
dynabench_site.celery) queues it again once the broker answers, so scoring resumes with no command.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from celery import shared_task
from django.utils import timezone

from annotation import assistant, scoring
from annotation.models import Example
from dynabench_site.jobs import dispatch, runner_for

log = logging.getLogger(__name__)


@shared_task(bind=True, name="annotation.score_example", acks_late=True, max_retries=None, ignore_result=True)
def score_example(self, example_id: int, word_map: bool = True) -> str:
    """Score one saved example; on a retryable serving error, retry with exponential backoff.

    Inline (no broker) there is no one to wait for a countdown: the example stays pending and the
    writer's next poll, or `manage.py score_pending`, retries it once its backoff has passed.
    `word_map=False` (a submission that asked for no map: the round simulation) stores the verdict with its map
    unavailable, "not requested" (`scoring.NOT_REQUESTED`), instead of queueing `explain_example`.
    """
    try:
        # A worker gathers what is queued for the same round into one forward pass; inline (the embedded default)
        # a request scores its own example only.
        gather = 1 if self.request.is_eager else scoring.batch_max()
        batch = scoring.score_batch(example_id, gather=gather, word_map=word_map)
    except scoring.ScoringDeferred as deferred:
        if self.request.is_eager:
            return "deferred"  # inline: the writer's next poll or the sweep tries again once it is due
        raise self.retry(countdown=scoring.backoff_seconds(deferred.attempts), exc=deferred) from deferred
    if batch.outcome == scoring.Outcome.SCORED and word_map:
        enqueue_map(example_id)
    for other in batch.others:  # scored in this batch: their own jobs leave them to it, maps included
        if scoring.wants_map(other):
            enqueue_map(other.pk)
    return batch.outcome.value


NOT_REQUESTED = scoring.NOT_REQUESTED  # a verdict stored without a map: the map's state says why


# Maps never delay verdicts: this job is routed to a queue of its own (settings.EXPLANATION_QUEUE), served by the
# "explainer" worker (one process, lower CPU priority, models in its own process: docs/DEPLOY.md).


@shared_task(bind=True, name="annotation.explain_example", acks_late=True, max_retries=None, ignore_result=True)
def explain_example(self, example_id: int, asked: bool = False) -> str:
    """Compute the word map of a scored example (after its verdict; retried with backoff on serving errors).
    `asked`: the writer or an owner asked for it, so it is computed even when the writer has moved on."""
    try:
        return scoring.explain_example(example_id, asked=asked).value
    except scoring.ScoringDeferred as deferred:
        if self.request.is_eager:
            return "deferred"  # inline: the sweep, or the writer asking again, tries later
        raise self.retry(countdown=scoring.backoff_seconds(deferred.attempts), exc=deferred) from deferred


def enqueue_map(example_id: int, asked: bool = False) -> None:
    """Queue the word map of a just-scored example (`asked`: on request, see `explain_example`). If the queue is
    unreachable, the map stays pending and is dropped as unavailable after EXPLANATION_MAX_AGE_SECONDS (the
    verdict is stored either way)."""
    if asked:
        dispatch(explain_example, example_id, True)
    else:
        dispatch(explain_example, example_id)


def request_map(example: Example) -> bool:
    """The writer or an owner asks again for a map that is unavailable: pending again and queued. True when
    queued."""
    if not scoring.reopen_map(example):
        return False
    enqueue_map(example.pk, asked=True)
    return True


@shared_task(name="annotation.score_pending", ignore_result=True)
def score_pending(limit: int = 500) -> int:
    """Re-enqueue pending examples whose job was lost or could not be queued (Celery beat, worker start-up)."""
    expired = sum(scoring.expire_stale_map(example) for example in scoring.stale_maps(limit))
    if expired:
        log.info("map sweep: %s word map(s) whose job was lost marked unavailable", expired)
    return sweep_pending(limit, slack=scoring.sweep_slack())


DELAYED = ("scoring delayed: the job queue is unreachable ({error}); the example is saved and will be scored "
           "automatically when the queue is back")


def enqueue_scoring(example_id: int, word_map: bool = True) -> None:
    """Score the example once the current transaction commits: inline in the embedded default, on a worker
    with a broker. A broker that is down leaves it pending with `scoring_delayed`; the sweep queues it when
    the broker is back (or the writer's next poll does; a swept example gets its word map as usual).
    `word_map=False`: no word map after the verdict (`scoring.NOT_REQUESTED`)."""
    args = (example_id,) if word_map else (example_id, False)
    dispatch(score_example, *args, on_failure=lambda exc: mark_delayed(example_id, exc))


def mark_delayed(example_id: int, exc: Exception) -> None:
    message = DELAYED.format(error=f"{type(exc).__name__}: {exc}"[:300])
    if Example.objects.filter(pk=example_id, scoring_state=Example.Scoring.PENDING).update(
        scoring_delayed=True, scoring_error=message, updated_at=timezone.now()
    ):
        scoring.announce_settled(example_id)


def revive_if_due(example: Example, slack: float = 0.0) -> bool:
    """Re-enqueue a pending example whose retry is due; only one of many concurrent polls does."""
    if not scoring.claim_revival(example, slack=slack):
        return False
    enqueue_scoring(example.pk)
    return True


def sweep_pending(limit: int = 500, include_failed: bool = False, slack: float = 0.0) -> int:
    """Re-enqueue due pending examples (and, on request, failed ones); returns how many."""
    count = sum(revive_if_due(example, slack) for example in scoring.pending_examples(limit, include_failed))
    if count:
        log.info("pending sweep: %s example(s) queued for scoring again", count)
    return count


def retry_failed(examples: Iterable[Example]) -> int:
    """An owner asks again for examples whose scoring failed: pending again with a fresh set of tries, and
    queued now. Returns how many were failed (pending or scored examples are left alone)."""
    count = 0
    for pk in [e.pk for e in examples]:
        again = Example.objects.filter(pk=pk, scoring_state=Example.Scoring.FAILED).update(
            scoring_state=Example.Scoring.PENDING, scoring_attempts=0, scoring_delayed=False, scoring_error="",
            updated_at=timezone.now(),
        )
        if again:
            count += 1
            enqueue_scoring(pk)
    return count


def score_pending_of_round(round_id: int) -> int:
    """Queue every pending example of a round for scoring now, whatever its backoff: its round just got an
    ensemble (e.g. the demo models finished training in the background). `scoring.claim` keeps it to one
    verdict per example even if a poll queues it too. Returns how many."""
    ids = list(Example.objects.filter(round_id=round_id, scoring_state=Example.Scoring.PENDING)
               .order_by("created_at").values_list("pk", flat=True))
    for example_id in ids:
        enqueue_scoring(example_id)
    return len(ids)


# --- the writing assistant (annotation.assistant) --------------------------------------------------------------


@shared_task(name="annotation.suggest", acks_late=True, ignore_result=True)
def suggest(suggestion_id: int) -> str:
    """Write, clean and score the suggestions of one request (idempotent: a ready or failed one is left)."""
    return assistant.run(suggestion_id)


# In the embedded default (no broker) it runs in a thread of the web process: the request that queued it has
# answered already, and the local model it loads stays in that process for the next request (dynabench_site.jobs).
suggest.background_thread = True


def enqueue_suggestion(suggestion_id: int) -> None:
    dispatch(suggest, suggestion_id, on_failure=lambda exc: assistant.not_queued(suggestion_id))


def warm_assistant(task):
    """Have the task's local language model loaded, and its prompt read, before the writer's first request, where
    the suggest job runs in this process (the embedded default's thread: `assistant.warm_up`); a Celery worker's
    job, or an inline one (tests), gains nothing from it (None). The create page calls it when it offers the
    assistant (`{% warm_assistant task %}`)."""
    if runner_for(suggest) != "thread":
        return None
    return assistant.warm_up(task)
