"""What every part of scoring shares: how a job ends (`Outcome`), the retryable failure (`ScoringDeferred`) and its
backoff, the serving errors that are worth another try (`transient`), and the model's input and forward pass."""

from __future__ import annotations

from enum import StrEnum

from django.conf import settings

from annotation.models import Example
from modelzoo.services import predict_for_round
from tasks.models import Round
from zoo.types import BackendError, RoundVerdict


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


# A model server's 409 ("already registered", or being registered by someone else right now) says the model is
# there or about to be: try again, never give up on it.
TRANSIENT_STATUS = {409}


def transient(exc: BackendError) -> BackendError:
    if not exc.retryable and getattr(exc, "status", None) in TRANSIENT_STATUS:
        return BackendError(str(exc), retryable=True)
    return exc


def predict(round: Round, model_inputs: list[dict[str, str]], explain: bool = False,
            ensemble: int | None = None) -> list[RoundVerdict]:
    """The round's ensemble (or `ensemble`, a study arm's own, by id) on `model_inputs`, one forward pass
    (BackendError when serving is unavailable)."""
    return predict_for_round(round, model_inputs, explain=explain, ensemble=ensemble)


def model_input_for(example: Example) -> dict[str, str]:
    task = example.round.task
    payload = example.context.payload if example.context else {}
    return task.kind_impl.model_input(task.typed_config, payload, example.input)
