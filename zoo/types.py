"""The contract between the model zoo and its callers (annotation, rounds, hardness).

Callers use `modelzoo.services.predict_for_round(round, model_inputs, explain=True)`, which returns one
`RoundVerdict` per input, or raises `BackendError` (with `retryable`) when serving is unavailable. No Django
here: the site answers a `BackendError` as the `Unavailable` domain error it means
(`dynabench_site.errors.as_domain_error`).
Model inputs come from the task kind (`TaskKind.model_input`):
  classification: {"text": str, "text_pair"?: str}      qa: {"question": str, "context": str}
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class ClassPrediction(TypedDict):
    label: str
    probs: dict[str, float]


class SpanPrediction(TypedDict):
    text: str
    start: int  # character offset into the context
    end: int  # exclusive character offset
    score: float


class ModelPrediction(TypedDict):
    model_version: int
    name: str
    prediction: dict[str, Any]  # ClassPrediction or SpanPrediction


class WordAttribution(TypedDict):
    word: str
    score: float  # signed, normalised to [-1, 1] for display
    segment: NotRequired[int]  # 0 = first text (premise / question), 1 = second (hypothesis / passage)


class Explanation(TypedDict):
    method: str  # "occlusion" (default), "input_x_gradient" or "integrated_gradients"
    model_version: int  # the first member (kept for old readers); all of them: model_versions
    model_versions: NotRequired[list[int]]
    members: NotRequired[int]  # how many models the map covers (all the ensemble's)
    legend: NotRequired[str]  # what the colours mean, the method and the number of models, for people
    target: str  # the label explained; QA: "answer" (occlusion) or "start" (gradient methods)
    words: list[WordAttribution]
    probability: NotRequired[float]  # occlusion: the ensemble's probability of the explained answer
    peak: NotRequired[float]  # occlusion: the largest probability change one word makes (score x peak = drop)
    span: NotRequired[list[int]]  # QA: the explained answer's [start, end) character offsets
    delta: NotRequired[float | None]  # IG convergence delta
    end_words: NotRequired[list[WordAttribution]]  # QA, gradient methods: attributions for the end position


class RoundVerdict(TypedDict):
    ensemble: dict[str, Any]  # ClassPrediction or SpanPrediction, aggregated over the members
    models: list[ModelPrediction]
    model_versions: list[int]
    explanation: Explanation | None


class BackendError(Exception):
    """Serving failed. `retryable` says whether trying again later can help (server down, overloaded,
    workers loading) or cannot (bad input, a model that is missing or broken). A request that meets it
    answers 503 with Retry-After when retrying can help, else 502 (the model server cannot answer it):
    `status_code`, `code` and `retry_after` say so to whoever answers the request."""

    def __init__(self, message: str, *, retryable: bool):
        super().__init__(message)
        self.message = message
        self.retryable = retryable

    @property
    def status_code(self) -> int:
        return 503 if self.retryable else 502

    @property
    def code(self) -> str:
        return "unavailable" if self.retryable else "model_failed"

    @property
    def retry_after(self) -> int | None:
        return 5 if self.retryable else None


class NoEnsembleYet(BackendError):
    """The round has no deployed ensemble yet (its models are still training): not a failure of the example.
    Scoring keeps it pending however many times it is asked, and scores it when the ensemble is deployed."""

    def __init__(self, message: str):
        super().__init__(message, retryable=True)
