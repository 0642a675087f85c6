"""The verdict's word map: a job of its own, after the verdict.

A verdict is one forward pass of the ensemble; its word map (word occlusion: the input plus one row per word, per
member) costs many more. So the scoring job stores the verdict alone (`explanation_state` "pending") and queues
`explain_example` on a queue of its own (EXPLANATION_QUEUE, served by the explainer worker at a lower CPU
priority): the writer sees the verdict as soon as the forward pass is done and the map when it arrives. A map that
could not start within EXPLANATION_MAX_AGE_SECONDS of its verdict (the model server was busy with verdicts) is
dropped as "unavailable", so a backlog of maps never grows without end; the writer, or an owner, can ask for it
again (`reopen_map`, through `annotation.jobs.request_map`).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from annotation.models import Example
from annotation.scoring.common import Outcome, ScoringDeferred, model_input_for, stale_seconds, transient
from modelzoo.services import explain_verdict
from zoo.types import BackendError

log = logging.getLogger(__name__)


def map_max_age() -> float:
    return float(settings.EXPLANATION_MAX_AGE_SECONDS)


def map_max_retries() -> int:
    return int(settings.EXPLANATION_MAX_RETRIES)


MAP_TOO_LATE = ("not computed: the model server was busy with verdicts for more than {age:.0f} s after this one; "
                "ask for the map again")


SUPERSEDED = ("not worked out: you had moved on to a newer example before its turn came; ask for it again to see "
              "it")


def explain_example(example_id: int, asked: bool = False) -> Outcome:
    """Compute and store the word map of a scored example (idempotent). Raises ScoringDeferred on a retryable
    serving error (the job retries with backoff, up to EXPLANATION_MAX_RETRIES tries).

    A map is worked out only while someone may look at it: the one that follows a verdict is dropped before it runs
    when its writer has submitted a newer example on the task since (their page shows that one now), unless it was
    `asked` for (the writer or an owner asked again: `jobs.request_map`). Dropped, it is unavailable with the
    reason, and asking again computes it (issue 27: nobody saw most maps of a busy writer)."""
    example = Example.objects.select_related("round__task", "context").filter(pk=example_id).first()
    if example is None or example.scoring_state != Example.Scoring.SCORED:
        return Outcome.SKIPPED
    if example.explanation_state != Example.Map.PENDING or expire_stale_map(example):
        return Outcome.SKIPPED
    if not asked and superseded(example):
        Example.objects.filter(pk=example.pk, explanation_state=Example.Map.PENDING,
                               explanation_attempts=example.explanation_attempts).update(
            explanation_state=Example.Map.UNAVAILABLE, explanation_error=SUPERSEDED, updated_at=timezone.now())
        return Outcome.SUPERSEDED
    token = example.explanation_attempts + 1
    if not Example.objects.filter(pk=example.pk, explanation_state=Example.Map.PENDING,
                                  explanation_attempts=example.explanation_attempts).update(explanation_attempts=token):
        return Outcome.SKIPPED  # another job took this try
    try:
        result = explain_verdict(example.round.task, example.model_versions, model_input_for(example),
                                 example.ensemble_prediction)
    except BackendError as exc:
        return _map_error(example, token, transient(exc))
    except Exception as exc:  # a bug or an unexpected outage: keep trying a few times
        log.exception("unexpected error explaining example %s", example.pk)
        return _map_error(example, token, BackendError(f"{type(exc).__name__}: {exc}", retryable=True))
    state = Example.Map.READY if result else Example.Map.UNAVAILABLE
    Example.objects.filter(pk=example.pk, explanation_state=Example.Map.PENDING, explanation_attempts=token).update(
        explanation=result, explanation_state=state,
        explanation_error="" if result else "these models give no word map", updated_at=timezone.now(),
    )
    return Outcome.MAPPED if result else Outcome.FAILED


def superseded(example: Example) -> bool:
    """Whether the example's writer has submitted a newer example on the same task (their page moved on)."""
    return Example.objects.filter(author_id=example.author_id, round__task_id=example.round.task_id,
                                  pk__gt=example.pk).exists()


def _map_error(example: Example, token: int, exc: BackendError) -> Outcome:
    retry = exc.retryable and token < max(map_max_retries(), 1)
    fields = {"explanation_error": str(exc)[:2000], "updated_at": timezone.now()}
    if not retry:
        fields["explanation_state"] = Example.Map.UNAVAILABLE
    Example.objects.filter(pk=example.pk, explanation_state=Example.Map.PENDING, explanation_attempts=token).update(
        **fields)
    log.warning("word map of example %s, attempt %s: %s (%s)", example.pk, token, exc, "will retry" if retry else "given up")
    if retry:
        raise ScoringDeferred(example.pk, token, str(exc)) from exc
    return Outcome.FAILED


def expire_stale_map(example: Example, slack: float = 0.0) -> bool:
    """Drop a map that has waited longer than EXPLANATION_MAX_AGE_SECONDS (+ `slack`) since it was asked for:
    unavailable, with the reason. True when this call dropped it."""
    if example.explanation_state != Example.Map.PENDING or example.explanation_queued_at is None:
        return False
    age = (timezone.now() - example.explanation_queued_at).total_seconds()
    if age <= map_max_age() + slack:
        return False
    return bool(Example.objects.filter(
        pk=example.pk, explanation_state=Example.Map.PENDING, explanation_attempts=example.explanation_attempts
    ).update(explanation_state=Example.Map.UNAVAILABLE, explanation_error=MAP_TOO_LATE.format(age=map_max_age()),
             updated_at=timezone.now()))


def reopen_map(example: Example) -> bool:
    """Ask again for the map of a scored example whose map is unavailable; True when it is pending again."""
    return bool(Example.objects.filter(
        pk=example.pk, scoring_state=Example.Scoring.SCORED, explanation_state=Example.Map.UNAVAILABLE
    ).update(explanation_state=Example.Map.PENDING, explanation_error="", explanation_attempts=0,
             explanation_queued_at=timezone.now(), updated_at=timezone.now()))


def stale_maps(limit: int = 500) -> list[Example]:
    """Maps still pending although they waited longer than their maximum age (their job was lost)."""
    horizon = timezone.now() - timedelta(seconds=map_max_age() + stale_seconds())
    return list(Example.objects.filter(explanation_state=Example.Map.PENDING, explanation_queued_at__lt=horizon)
                .order_by("explanation_queued_at")[:limit])
