"""The scoring job: claim a pending example, score it (with whatever else of its round is queued, in one forward
pass), and hand each verdict to `verdicts.store`.

Workers claim an example with a conditional update on `scoring_attempts`, and store the verdict only if their
claim is still the latest one, so two workers never store a verdict for the same example twice.
"""

from __future__ import annotations

import contextlib
import logging
from typing import NamedTuple

from django.conf import settings
from django.core.cache import caches
from django.utils import timezone

from annotation.models import Example
from annotation.scoring.common import Outcome, ScoringDeferred, model_input_for, predict, transient
from annotation.scoring.verdicts import record_error, store
from modelzoo import opponent
from zoo.types import BackendError

log = logging.getLogger(__name__)


def claim(example: Example) -> int | None:
    """Take the next attempt of a pending example; None when it is scored or someone else claimed first."""
    token = example.scoring_attempts + 1
    won = Example.objects.filter(
        pk=example.pk, scoring_state=Example.Scoring.PENDING, scoring_attempts=example.scoring_attempts
    ).update(scoring_attempts=token, scoring_delayed=False, updated_at=timezone.now())
    return token if won else None


def batch_max() -> int:
    return int(settings.SCORING_BATCH_MAX)


def score_example(example_id: int) -> Outcome:
    """Score one example (idempotent). Raises ScoringDeferred on a retryable serving error."""
    return score_batch(example_id).outcome


class Batch(NamedTuple):
    outcome: Outcome  # the example's own
    others: list[Example]  # the other examples this forward pass scored (`gather`)


def score_batch(example_id: int, gather: int = 1, word_map: bool = True) -> Batch:
    """Score one example (idempotent) and, with `gather` > 1 (the worker: SCORING_BATCH_MAX), up to `gather - 1`
    other examples of the same round still waiting for their first try, in the same forward pass: verdicts that
    arrive together reach the model as one batch. Raises ScoringDeferred on a retryable serving error.

    Each gathered example is claimed as its own job would claim it, so no verdict is ever stored twice, and is
    marked in the cache while the batch runs (at most BATCH_MARK_SECONDS, should the worker die): its own job,
    finding it marked, leaves it to the batch (`Outcome.SKIPPED`) instead of taking the claim over and scoring it
    alone. A stored example keeps its mark until it expires, so its own job, which usually arrives after the
    batch, skips it on one cache read instead of reading its row (issue 27). A gathered example whose batch failed
    is unmarked and recorded as its own try would be, and the sweep (or its writer's poll) tries it again when
    due: delayed, never lost.

    `word_map=False` (its job's argument; a gathered example says so in `metadata.word_map`): the verdict is stored
    with its map unavailable, not requested."""
    if gather > 1 and in_a_batch(example_id):  # in a batch now, or scored by one: no database read at all
        return Batch(Outcome.SKIPPED, [])
    example = Example.objects.select_related("round__task", "context", "arm").filter(pk=example_id).first()
    if example is None or example.scoring_state != Example.Scoring.PENDING:
        return Batch(Outcome.SKIPPED, [])
    if example.scoring_attempts and in_a_batch(example.pk):
        return Batch(Outcome.SKIPPED, [])
    token = claim(example)
    if token is None:
        return Batch(Outcome.SKIPPED, [])
    if not word_map:
        example.metadata = {**(example.metadata or {}), "word_map": False}  # read by verdicts.store only
    batch = [(example, token), *gathered(example, gather - 1)]
    scored: list[Example] = []
    try:
        result = _score_together(example, token, batch)
        scored = result.others
        return result
    finally:
        # The batch is over. Those it stored keep their mark until it expires, so that their own jobs, arriving
        # next, skip them on a cache read; the others (a failed batch) are the sweep's or their own jobs' again.
        stored = {member.pk for member in scored}
        if len(batch) > 1:
            unmark([member.pk for member, _ in batch[1:] if member.pk not in stored])


def ensemble_of(example: Example) -> int | None:
    """The ensemble the example is scored against: its study arm's own (study.arms), else None (the round's live
    one)."""
    return example.arm.ensemble_id if example.arm_id is not None else None


def _score_together(example: Example, token: int, batch: list[tuple[Example, int]]) -> Batch:
    ensemble = ensemble_of(example)  # the batch's members share it (`gathered`)
    try:
        verdicts = predict(example.round, [model_input_for(member) for member, _ in batch],
                           **({"ensemble": ensemble} if ensemble else {}))
    except BackendError as exc:
        error = transient(exc)
    except Exception as exc:  # a bug or an unexpected outage: keep the example, retry later
        log.exception("unexpected error scoring example %s", example.pk)
        error = BackendError(f"{type(exc).__name__}: {exc}", retryable=True)
    else:
        rival = opponent.current(example.round.task)  # one lookup for the whole batch (the same task)
        others = [member for (member, claimed), verdict in zip(batch[1:], verdicts[1:], strict=True)
                  if store(member, claimed, verdict, rival) == Outcome.SCORED]
        return Batch(store(example, token, verdicts[0], rival), others)
    for member, claimed in batch[1:]:
        with contextlib.suppress(ScoringDeferred):  # its retry is the sweep's (or a poll's) once its backoff has passed
            record_error(member, claimed, error)
    return Batch(record_error(example, token, error), [])


BATCH_MARK_SECONDS = 30


def _mark_key(example_id: int) -> str:
    return f"scoring:batched:{example_id}"


def in_a_batch(example_id: int) -> bool:
    try:
        return caches["default"].get(_mark_key(example_id)) is not None
    except Exception:  # the cache is down: take the claim over (a forward pass wasted, nothing stored twice)
        return False


def unmark(example_ids: list[int]) -> None:
    """The batch is over (stored or failed): their own jobs, or the sweep, may take them again."""
    try:
        caches["default"].delete_many([_mark_key(pk) for pk in example_ids])
    except Exception as exc:
        log.debug("could not unmark a batch: %s", exc)


def gathered(example: Example, limit: int) -> list[tuple[Example, int]]:
    """Up to `limit` other examples of the example's round still waiting for their first try, each claimed: only
    those scored against the same ensemble (a study arm may have its own: `ensemble_of`)."""
    if limit <= 0:
        return []
    ensemble = ensemble_of(example)
    same = {"arm__ensemble_id": ensemble} if ensemble else {"arm__ensemble__isnull": True}
    waiting = list(Example.objects.select_related("context")
                   .filter(round_id=example.round_id, scoring_state=Example.Scoring.PENDING, scoring_attempts=0,
                           **same)
                   .exclude(pk=example.pk).order_by("pk")[:limit])
    if not waiting:
        return []
    try:  # marked before they are claimed, so that no job of theirs sees a claim without its mark
        caches["default"].set_many({_mark_key(other.pk): 1 for other in waiting}, timeout=BATCH_MARK_SECONDS)
    except Exception as exc:
        log.debug("could not mark a batch: %s", exc)
    claimed, missed = [], []
    for other in waiting:
        other.round = example.round  # the same round: its task and ensemble already in memory
        token = claim(other)
        if token is not None:
            claimed.append((other, token))
        else:  # its own job (or another batch) took it first: not this batch's, so not marked by it
            missed.append(other.pk)
    if missed:
        unmark(missed)
    return claimed
