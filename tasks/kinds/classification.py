"""Generic classification: a new classification task is defined by configuration alone."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_noop
from pydantic import Field, field_validator, model_validator

from dynabench_site.text import quote
from tasks.kinds.base import InputError, TaskConfig, TaskKind


class ClassificationConfig(TaskConfig):
    labels: list[str] = Field(default_factory=lambda: ["positive", "negative"], min_length=2, max_length=50)
    # Context fields that are fed to the model (the rest are shown only, e.g. a prompt for inspiration).
    model_context_fields: list[str] | None = None

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: list[str]) -> list[str]:
        labels = [label.strip() for label in labels]
        if any(not label for label in labels):
            raise ValueError("labels must not be empty strings")
        if len(set(labels)) != len(labels):
            raise ValueError("labels must be unique")
        return labels

    @model_validator(mode="after")
    def _model_fields_shown(self) -> ClassificationConfig:
        extra = set(self.model_context_fields or []) - set(self.context_fields)
        if extra:
            raise ValueError(f"model_context_fields {sorted(extra)} are not in context_fields")
        if len(self.input_fields) + len(self.fed_context_fields) > 2:
            raise ValueError("a classifier takes at most two text segments (context fields fed + input fields)")
        return self

    @property
    def fed_context_fields(self) -> list[str]:
        return self.context_fields if self.model_context_fields is None else self.model_context_fields


class ClassificationKind(TaskKind):
    name = "classification"
    label = gettext_noop("Classification (configured)")
    head = "classification"
    config_class = ClassificationConfig
    metrics = ("accuracy", "macro_f1")

    def model_context_fields(self, config: ClassificationConfig) -> list[str]:
        return list(config.fed_context_fields)

    def clean_target(self, config: ClassificationConfig, context: dict[str, Any], raw: Any) -> str:
        if not isinstance(raw, str) or raw not in config.labels:
            raise InputError("target", f"unknown label {quote(raw)}; expected one of: {', '.join(config.labels)}")
        return raw

    def model_input(self, config: ClassificationConfig, context: dict[str, Any], inputs: dict[str, str]) -> dict[str, str]:
        segments = [str(context[f]) for f in config.fed_context_fields] + [inputs[f] for f in config.input_fields]
        if len(segments) == 1:
            return {"text": segments[0]}
        return {"text": segments[0], "text_pair": segments[1]}

    def is_fooled(self, config: ClassificationConfig, target: str, prediction: dict[str, Any]) -> bool:
        return prediction["label"] != target

    def evaluate(self, config: ClassificationConfig, targets: list[str], predictions: list[dict[str, Any]]) -> dict[str, float]:
        predicted = [p["label"] for p in predictions]
        return {"accuracy": accuracy(targets, predicted), "macro_f1": macro_f1(targets, predicted, config.labels)}

    def target_label(self, target: str) -> str:
        return target


def accuracy(gold: list[str], predicted: list[str]) -> float:
    if not gold:
        return 0.0
    return sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold)


def macro_f1(gold: list[str], predicted: list[str], labels: list[str]) -> float:
    """Macro-F1 over the labels present in gold or predictions (as scikit-learn does by default)."""
    present = [label for label in labels if label in gold or label in predicted]
    if not present:
        return 0.0
    scores = []
    for label in present:
        tp = sum(g == label and p == label for g, p in zip(gold, predicted, strict=True))
        fp = sum(g != label and p == label for g, p in zip(gold, predicted, strict=True))
        fn = sum(g == label and p != label for g, p in zip(gold, predicted, strict=True))
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores)
