"""Storing a verdict: the ensemble's answer (and the language model opponent's row beside it) decided by the verdict
seam (`tasks.kinds.verdict.decide`), written on the example only if the worker's claim is still the latest one;
or the failed try recorded, with its retry or the reason it gave up.

"Fooled" is never decided here: `verdict_of` hands the model server's answer to the seam, and the sandbox
(`annotation.services.sandbox_verdict`) and the writing assistant's candidates (`annotation.assistant`) go through
the same `verdict_of` and show the same `Verdict.record`.
"""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from annotation import signals
from annotation.models import Example
from annotation.scoring.common import Outcome, ScoringDeferred, max_retries, model_input_for
from annotation.scoring.waiting import announce_settled
from modelzoo import opponent
from tasks.kinds.verdict import HasKind, Verdict, decide
from zoo.types import BackendError, NoEnsembleYet, RoundVerdict

log = logging.getLogger(__name__)

# The map state of a verdict whose submission asked for none (`metadata.word_map` false: the round simulation, the
# load bench): stored with the verdict itself, so no job follows it. The writer or an owner can still ask for it.
NOT_REQUESTED = "not requested (simulation): submitted without a word map; ask for it to compute it"


def verdict_of(task: HasKind, target: Any, predicted: RoundVerdict, rival: dict[str, Any] | None = None) -> Verdict:
    """The model server's answer for one input (`predicted`), with the opponent's row when there is one (`rival`:
    `modelzoo.opponent.verdict_entry`, its own flag inside), decided by the seam. `fooled` stays the ensemble's: an
    opponent answers beside it and never changes it (modelzoo.opponent)."""
    models = predicted["models"] if rival is None else [*predicted["models"], rival]
    return decide(task, target, predicted["ensemble"], models)


def wants_map(example: Example) -> bool:
    return (example.metadata or {}).get("word_map", True) is not False


def _map_state(example: Example, explanation: Any) -> tuple[str, str]:
    if explanation:
        return Example.Map.READY, ""
    if not wants_map(example):
        return Example.Map.UNAVAILABLE, NOT_REQUESTED
    return Example.Map.PENDING, ""


def store(example: Example, token: int, predicted: RoundVerdict, rival_version: Any = None) -> Outcome:
    """Store the verdict of one claimed try (`token`); SKIPPED when a later claim holds the example. A language
    model opponent (`rival_version`, looked up once per batch) answers beside the ensemble, with its own flag, or
    is left out of this verdict with the reason (never a failed verdict)."""
    task = example.round.task
    rival = None
    if rival_version is not None:
        rival = opponent.verdict_entry(task, model_input_for(example), example.target, version=rival_version)
    verdict = verdict_of(task, example.target, predicted, rival)
    explanation = predicted.get("explanation")
    map_state, map_error = _map_state(example, explanation)
    now = timezone.now()
    values = dict(
        scoring_state=Example.Scoring.SCORED, **verdict.record(), explanation=explanation,
        explanation_state=map_state, explanation_error=map_error,
        explanation_queued_at=now, explanation_attempts=0,
        model_versions=predicted["model_versions"], scoring_error="", scored_at=now, updated_at=now,
    )
    stored = Example.objects.filter(
        pk=example.pk, scoring_state=Example.Scoring.PENDING, scoring_attempts=token
    ).update(**values)
    if stored:  # one line per stored verdict: the fault tests count them (never two for one example)
        log.info("verdict stored for example %s (attempt %s, fooled=%s)", example.pk, token, verdict.fooled)
        signals.verdict_stored.send(sender=Example, example_id=example.pk, fooled=bool(verdict.fooled))
        # The waiting request gets the stored columns with its wake-up: it answers without reading the row.
        announce_settled(example.pk, {**values, "scoring_attempts": token, "scoring_delayed": False})
    return Outcome.SCORED if stored else Outcome.SKIPPED


def record_error(example: Example, token: int, exc: BackendError) -> Outcome:
    """A failed try: pending again (ScoringDeferred raised: retry with backoff) or failed, with the reason."""
    # Waiting for the round's first models is not a failed try: such an example never gives up (it is scored
    # when the ensemble is deployed, `annotation.apps`); other retryable errors get SCORING_MAX_RETRIES tries.
    retry = exc.retryable and (isinstance(exc, NoEnsembleYet) or token < max(max_retries(), 1))
    if retry:
        state, message = Example.Scoring.PENDING, str(exc)
    elif exc.retryable:
        state, message = Example.Scoring.FAILED, f"gave up after {token} tries: {exc}"
    else:
        state, message = Example.Scoring.FAILED, str(exc)
    changed = Example.objects.filter(
        pk=example.pk, scoring_state=Example.Scoring.PENDING, scoring_attempts=token
    ).update(scoring_state=state, scoring_error=message[:2000], updated_at=timezone.now())
    if changed and state == Example.Scoring.FAILED:
        announce_settled(example.pk)
    log.warning("scoring example %s, attempt %s: %s (retryable=%s, %s)", example.pk, token, exc, exc.retryable,
                "will retry" if retry else "failed")
    if retry:
        raise ScoringDeferred(example.pk, token, str(exc)) from exc
    return Outcome.FAILED
