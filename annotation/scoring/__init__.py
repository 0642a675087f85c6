"""Scoring: call the round's ensemble for one saved example and store the verdict (the worker's side).

One module per part, each with its own story:

- `batching`: the scoring job. Workers claim an example with a conditional update on `scoring_attempts` and store
  its verdict only while their claim is the latest, so no verdict is stored twice; verdicts queued together for one
  round are scored in one forward pass.
- `verdicts`: storing the verdict. "Fooled" is decided by the verdict seam (`tasks.kinds.verdict.decide`, by the
  task kind's rule or by people), never here; the sandbox (`annotation.services`) and the writing assistant's
  candidates (`annotation.assistant`) go through the same `verdicts.verdict_of`. A failed try is recorded there.
- `maps`: the verdict first, its word map second, in a job of its own on a queue of lower priority.
- `recovery`: retries with exponential backoff, the pending sweep, and failed examples asked for again.
- `waiting`: the submission request waits for its verdict on the example's wake-up channel
  (`dynabench_site.wake`, on the cache's Redis), not by polling the database.
- `common`: what they share (outcomes, backoff, the model input and the forward pass).

Failure path: a retryable serving error (server down or starting, a model still loading, an overload) keeps the
example pending and is tried again with exponential backoff (capped at SCORING_RETRY_MAX_SECONDS); after
SCORING_MAX_RETRIES tries the example is `failed` with the last error, and stays so until an owner asks for it
again from the console's health page (`annotation.jobs.retry_failed`). A non-retryable error (a broken model)
fails at once. An example whose job could not be queued (broker down) is pending with `scoring_delayed` set,
and the pending sweep (Celery beat, and every worker at start-up) queues it as soon as the broker is back.
Queueing a scoring job is `annotation.jobs`; the sandbox (score without storing) is `annotation.services`.

This package re-exports each part's public names, so `from annotation import scoring` and `scoring.<name>` keep
working; code that replaces one of them in a test patches it where it is used (e.g. `batching.predict`).
"""

from __future__ import annotations

from annotation.scoring.batching import (
    BATCH_MARK_SECONDS,
    Batch,
    batch_max,
    claim,
    gathered,
    in_a_batch,
    score_batch,
    score_example,
    unmark,
)
from annotation.scoring.common import (
    Outcome,
    ScoringDeferred,
    backoff_seconds,
    max_retries,
    model_input_for,
    predict,
    retry_base_seconds,
    retry_max_seconds,
    stale_seconds,
    transient,
)
from annotation.scoring.maps import (
    MAP_TOO_LATE,
    SUPERSEDED,
    expire_stale_map,
    explain_example,
    map_max_age,
    map_max_retries,
    reopen_map,
    stale_maps,
    superseded,
)
from annotation.scoring.recovery import (
    claim_revival,
    first_attempt_grace,
    is_due,
    pending_examples,
    sweep_slack,
)
from annotation.scoring.verdicts import NOT_REQUESTED, record_error, store, verdict_of, wants_map
from annotation.scoring.waiting import announce_settled, await_verdict

_store_verdict = store  # the name tests and older callers use

__all__ = [
    "BATCH_MARK_SECONDS", "MAP_TOO_LATE", "NOT_REQUESTED", "SUPERSEDED", "Batch", "Outcome", "ScoringDeferred",
    "announce_settled", "await_verdict", "backoff_seconds", "batch_max", "claim", "claim_revival", "expire_stale_map",
    "explain_example", "first_attempt_grace", "gathered", "in_a_batch", "is_due", "map_max_age", "map_max_retries",
    "max_retries", "model_input_for", "pending_examples", "predict", "record_error", "reopen_map",
    "retry_base_seconds", "retry_max_seconds", "score_batch", "score_example", "stale_maps", "stale_seconds",
    "store", "superseded", "sweep_slack", "transient", "unmark", "verdict_of", "wants_map",
]
