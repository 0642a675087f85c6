"""Scoring: call the round's ensemble for one saved example and store the verdict (the worker's side).

Workers claim an example with a conditional update on `scoring_attempts`, and store the verdict only
if their claim is still the latest one, so two workers never store a verdict for the same example twice.
"Fooled" is always decided here, by the task kind's rule (through `tasks.kinds.is_fooled`), from the stored
ensemble prediction.

Failure path: a retryable serving error (server down or starting, a model still loading, an overload) keeps the
example pending and is tried again with exponential backoff (capped at SCORING_RETRY_MAX_SECONDS); after
SCORING_MAX_RETRIES tries the example is `failed` with the last error, and stays so until an owner asks for it
again from the console's health page (`annotation.jobs.retry_failed`). A non-retryable error (a broken model)
fails at once. An example whose job could not be queued (broker down) is pending with `scoring_delayed` set,
and the pending sweep (Celery beat, and every worker at start-up) queues it as soon as the broker is back.
Queueing a scoring job is `annotation.jobs`; the sandbox (score without storing) is `annotation.services`.

**The verdict first, its word map second.** A verdict is one forward pass of the ensemble; its word map (word
occlusion: the input plus one row per word, per member) costs many more. So the scoring job stores the verdict
alone (`explanation_state` "pending") and queues `explain_example` on a queue of its own (EXPLANATION_QUEUE,
served by the explainer worker at a lower CPU priority): the writer sees the verdict as soon as the forward pass
is done and the map when it arrives. A map that could not start within EXPLANATION_MAX_AGE_SECONDS of its verdict (the model server
was busy with verdicts) is dropped as "unavailable", so a backlog of maps never grows without end; the writer,
or an owner, can ask for it again (`request_map`).

**Waiting for a verdict without polling the database.** The submission request waits up to VERDICT_WAIT_MS for
its verdict (`await_verdict`). When the cache is Redis (CACHE_URL, as in every scale-out deployment), whoever
settles the example (verdict stored, failed, or its job could not be queued) pushes a token on a short-lived
Redis list for it once its transaction commits (`announce_settled`), and the request blocks on that list
(BLPOP, at most a second at a time): no CPU while it waits, and the answer leaves as soon as the verdict is
stored. A stored verdict's token carries the columns it wrote, so the request answers without reading the row
(issue 27: a cache read, not a database round trip); any other token, or a second without one, reads the row.
Without Redis, or while it is down, the request polls the row instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, NamedTuple

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.db import transaction
from django.utils import timezone

from annotation import signals
from annotation.models import Example
from modelzoo import opponent
from modelzoo.services import explain_verdict, predict_for_round
from tasks.kinds import is_fooled
from tasks.models import Round
from zoo.types import BackendError, NoEnsembleYet, RoundVerdict

log = logging.getLogger(__name__)


class Outcome(StrEnum):
    SCORED = "scored"  # a verdict stored
    MAPPED = "mapped"  # a word map stored
    SKIPPED = "skipped"  # already scored, or another worker holds the latest claim
    FAILED = "failed"  # a non-retryable error: the example is kept, marked failed
    SUPERSEDED = "superseded"  # a word map dropped before it ran: its writer has moved on (explain_example)


class ScoringDeferred(Exception):
    """A retryable serving error: the example stays pending and is scored on a later attempt."""

    def __init__(self, example_id: int, attempts: int, error: str):
        super().__init__(f"example {example_id}: attempt {attempts} failed ({error}); will retry")
        self.example_id = example_id
        self.attempts = attempts


def retry_base_seconds() -> float:
    return float(settings.SCORING_RETRY_BASE_SECONDS)


def max_retries() -> int:
    return int(settings.SCORING_MAX_RETRIES)


def retry_max_seconds() -> float:
    return float(settings.SCORING_RETRY_MAX_SECONDS)


def stale_seconds() -> float:
    return float(settings.SCORING_STALE_SECONDS)


def backoff_seconds(attempts: int) -> float:
    """Exponential backoff after `attempts` failed attempts, capped at SCORING_RETRY_MAX_SECONDS."""
    return min(retry_base_seconds() * 2 ** min(max(attempts - 1, 0), 30), retry_max_seconds())


def predict(round: Round, model_inputs: list[dict[str, str]], explain: bool = False) -> list[RoundVerdict]:
    return predict_for_round(round, model_inputs, explain=explain)


def model_input_for(example: Example) -> dict[str, str]:
    task = example.round.task
    payload = example.context.payload if example.context else {}
    return task.kind_impl.model_input(task.typed_config, payload, example.input)


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
    example = Example.objects.select_related("round__task", "context").filter(pk=example_id).first()
    if example is None or example.scoring_state != Example.Scoring.PENDING:
        return Batch(Outcome.SKIPPED, [])
    if example.scoring_attempts and in_a_batch(example.pk):
        return Batch(Outcome.SKIPPED, [])
    token = claim(example)
    if token is None:
        return Batch(Outcome.SKIPPED, [])
    if not word_map:
        example.metadata = {**(example.metadata or {}), "word_map": False}  # read by _store_verdict only
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


def _score_together(example: Example, token: int, batch: list[tuple[Example, int]]) -> Batch:
    try:
        verdicts = predict(example.round, [model_input_for(member) for member, _ in batch])
    except BackendError as exc:
        error = transient(exc)
    except Exception as exc:  # a bug or an unexpected outage: keep the example, retry later
        log.exception("unexpected error scoring example %s", example.pk)
        error = BackendError(f"{type(exc).__name__}: {exc}", retryable=True)
    else:
        rival = opponent.current(example.round.task)  # one lookup for the whole batch (the same task)
        others = [member for (member, claimed), verdict in zip(batch[1:], verdicts[1:], strict=True)
                  if _store_verdict(member, claimed, verdict, rival) == Outcome.SCORED]
        return Batch(_store_verdict(example, token, verdicts[0], rival), others)
    for member, claimed in batch[1:]:
        with contextlib.suppress(ScoringDeferred):  # its retry is the sweep's (or a poll's) once its backoff has passed
            _record_error(member, claimed, error)
    return Batch(_record_error(example, token, error), [])


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
    """Up to `limit` other examples of the example's round still waiting for their first try, each claimed."""
    if limit <= 0:
        return []
    waiting = list(Example.objects.select_related("context")
                   .filter(round_id=example.round_id, scoring_state=Example.Scoring.PENDING, scoring_attempts=0)
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


# A model server's 409 ("already registered", or being registered by someone else right now) says the model is
# there or about to be: try again, never give up on it.
TRANSIENT_STATUS = {409}


def transient(exc: BackendError) -> BackendError:
    if not exc.retryable and getattr(exc, "status", None) in TRANSIENT_STATUS:
        return BackendError(str(exc), retryable=True)
    return exc


# The map state of a verdict whose submission asked for none (`metadata.word_map` false: the round simulation, the
# load bench): stored with the verdict itself, so no job follows it. The writer or an owner can still ask for it.
NOT_REQUESTED = "not requested (simulation): submitted without a word map; ask for it to compute it"


def wants_map(example: Example) -> bool:
    return (example.metadata or {}).get("word_map", True) is not False


def _map_state(example: Example, explanation: Any) -> tuple[str, str]:
    if explanation:
        return Example.Map.READY, ""
    if not wants_map(example):
        return Example.Map.UNAVAILABLE, NOT_REQUESTED
    return Example.Map.PENDING, ""


def _store_verdict(example: Example, token: int, verdict: RoundVerdict, rival_version: Any = None) -> Outcome:
    fooled = is_fooled(example.round.task, example.target, verdict["ensemble"])
    # A language model opponent answers beside the ensemble, with its own "fooled" flag, or is left out of this
    # verdict with the reason (never a failed verdict); `fooled` above stays the ensemble's (modelzoo.opponent).
    if rival_version is not None:
        rival = opponent.verdict_entry(example.round.task, model_input_for(example), example.target,
                                       version=rival_version)
        verdict = {**verdict, "models": [*verdict["models"], rival]}
    explanation = verdict.get("explanation")
    map_state, map_error = _map_state(example, explanation)
    now = timezone.now()
    values = dict(
        scoring_state=Example.Scoring.SCORED, fooled=fooled, ensemble_prediction=verdict["ensemble"],
        model_predictions=verdict["models"], explanation=explanation,
        explanation_state=map_state, explanation_error=map_error,
        explanation_queued_at=now, explanation_attempts=0,
        model_versions=verdict["model_versions"], scoring_error="", scored_at=now, updated_at=now,
    )
    stored = Example.objects.filter(
        pk=example.pk, scoring_state=Example.Scoring.PENDING, scoring_attempts=token
    ).update(**values)
    if stored:  # one line per stored verdict: the fault tests count them (never two for one example)
        log.info("verdict stored for example %s (attempt %s, fooled=%s)", example.pk, token, fooled)
        signals.verdict_stored.send(sender=Example, example_id=example.pk, fooled=bool(fooled))
        # The waiting request gets the stored columns with its wake-up: it answers without reading the row.
        announce_settled(example.pk, {**values, "scoring_attempts": token, "scoring_delayed": False})
    return Outcome.SCORED if stored else Outcome.SKIPPED


def _record_error(example: Example, token: int, exc: BackendError) -> Outcome:
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


# --- the verdict's word map (a job of its own, after the verdict) ---------------------------------


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


# --- recovery: pending examples whose retry is due ------------------------------------------------


def first_attempt_grace() -> float:
    """How long a never-attempted example waits before a poll re-enqueues it (a worker may have a backlog)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return max(retry_base_seconds(), 1.0)
    return float(settings.SCORING_STALE_SECONDS)


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


def _settled_key(example_id: int) -> str:
    return caches["default"].make_key(f"example-settled:{example_id}")


def _settle_channel():
    """The Redis client of the default cache when it is Redis (CACHE_URL), else None."""
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    try:
        return backend._cache.get_client(write=True)
    except Exception:  # noqa: BLE001 - no channel: the waiting request polls the row instead
        return None


def announce_settled(example_id: int, stored: dict[str, Any] | None = None) -> None:
    """Wake a request waiting for this example (`await_verdict`) once the current transaction commits: its
    verdict was stored, it failed, or its scoring job could not be queued. `stored`: the columns the verdict
    just wrote, which the waiter takes instead of reading the row again. Best effort: the waiter reads the row
    at least once a second anyway."""
    token = "1" if stored is None else json.dumps(  # datetimes to the microsecond, as the row holds them
        {name: value.isoformat() if isinstance(value, datetime) else value for name, value in stored.items()})

    def push() -> None:
        client = _settle_channel()
        if client is None:
            return
        key = _settled_key(example_id)
        try:
            client.pipeline().rpush(key, token).expire(key, 60).execute()
        except Exception as exc:  # noqa: BLE001 - the cache is down: waiters poll
            log.debug("could not announce example %s: %s", example_id, exc)

    transaction.on_commit(push)


def await_verdict(example: Example, timeout: float, fresh: bool = False) -> Example:
    """Wait up to `timeout` seconds for a worker's verdict (inline jobs have finished already): blocked on the
    example's Redis list when the cache is Redis (`announce_settled`), polling the row otherwise.

    With Redis, a stored verdict arrives with its wake-up and is taken as it is: no read of the row. `fresh`: the
    caller has just saved the example (so it knows it is pending) and needs no first read either; a verdict stored
    before the wait began is on the list already."""
    channel = None if settings.CELERY_TASK_ALWAYS_EAGER else _settle_channel()
    if not (fresh and channel is not None):
        _reload(example)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return example
    deadline = time.monotonic() + timeout
    key = _settled_key(example.pk)
    pause = 0.02
    while example.scoring_state == Example.Scoring.PENDING and not example.scoring_delayed:
        remaining = deadline - time.monotonic()
        if remaining < 0.01:
            break
        if channel is not None:
            try:
                woken = channel.blpop([key], timeout=min(remaining, 1.0))
            except Exception:  # noqa: BLE001 - the cache is down: poll the row for the rest of the wait
                channel = None
                continue
            if woken is not None and _take(example, woken[1]):
                continue
        else:
            time.sleep(min(pause, remaining))
            pause = min(pause * 1.5, 0.25)
        _reload(example)
    return example


def _take(example: Example, token: bytes | str) -> bool:
    """The stored columns a wake-up carried (`announce_settled`), set on the example; False when it carried none
    (a failure, a delay: the row is read)."""
    try:
        stored = json.loads(token)
    except ValueError:
        return False
    if not isinstance(stored, dict) or stored.get("scoring_state") != Example.Scoring.SCORED:
        return False
    try:
        columns = {name: Example._meta.get_field(name).to_python(value) for name, value in stored.items()}
    except Exception:  # noqa: BLE001 - a field this code does not know (another version's worker): read the row
        return False
    for name, value in columns.items():
        setattr(example, name, value)
    return True


def _reload(example: Example) -> None:
    """The row's own columns again (the verdict), keeping the round, context and author the caller already holds:
    `refresh_from_db()` would drop them and the response would read each again."""
    example.refresh_from_db(fields=[f.attname for f in Example._meta.concrete_fields
                                    if not f.is_relation and not f.primary_key])
