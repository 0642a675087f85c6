"""Extractive QA: a question about a shown passage, answered by a span of that passage."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any, Literal

from django.utils.translation import gettext_noop
from pydantic import Field, model_validator

from tasks import choices
from tasks.kinds.base import InputError, SeedingSettings, TaskConfig, TaskKind, clean_text


class QASeedingSettings(SeedingSettings):
    """How the next round is seeded (docs/seeding.md): a weak span model is trained on the candidate pool and
    scores every pool question by span loss (or gradnorm, el2n); the k hardest in all become the round's seeds.
    (Question + passage pairs are ~10× longer than sentences: a pool of 1000 keeps seeding to a minute or two.)"""

    score: Literal[choices.SPAN_SEEDING_SCORES] = Field(  # type: ignore[assignment,valid-type]  # no gradnorm_deep
        choices.DEFAULT_SEEDING_SCORE,
        description="The hardness score of the weak span scorer: span loss (start + end cross-entropy), the head's "
                    "gradient norm, or EL2N (error norm averaged over 3 runs).")
    pool_max: int = Field(1000, ge=1, le=1_000_000, description="At most this many pool items are scored "
                                                             "(a stable sample: the same items every time).")
    k_per_label: int = Field(10, ge=0, le=10000, description="Seeds in all (QA has no labels); 0 turns seeding off.")


class QAConfig(TaskConfig):
    context_fields: list[str] = Field(default_factory=lambda: ["passage"])
    input_fields: list[str] = Field(default_factory=lambda: ["question"], min_length=1, max_length=1)
    f1_threshold: float = Field(0.4, gt=0, le=1)
    max_answer_chars: int = Field(200, ge=1, le=2000)
    seeding: QASeedingSettings = Field(default_factory=QASeedingSettings)
    instructions: str = (
        "Ask a question about the passage and highlight its answer in the passage. You fool the model when "
        "its answer overlaps yours with a word-level F1 below the task's threshold."
    )

    @model_validator(mode="after")
    def _one_passage(self) -> QAConfig:
        if len(self.context_fields) != 1:
            raise ValueError("a QA task has exactly one context field: the passage")
        return self


MAX_ALTERNATIVES = 20
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def f1_score(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def answer_texts(target: dict[str, Any]) -> list[str]:
    return [target["text"], *target.get("alternatives", [])]


class QAKind(TaskKind):
    name = "qa"
    label = gettext_noop("Extractive question answering")
    head = "qa"
    target_is_label = False
    answer_is_span = True
    config_class = QAConfig
    metrics = ("exact_match", "f1")

    def passage(self, config: QAConfig, context: dict[str, Any]) -> str:
        return str(context[config.context_fields[0]])

    def clean_target(self, config: QAConfig, context: dict[str, Any], raw: Any) -> dict[str, Any]:
        if not isinstance(raw, dict) or set(raw) - {"text", "start", "alternatives"}:
            raise InputError("target", 'must be an object {"text": the answer span, "start": its character offset}')
        text = clean_text("target.text", raw.get("text"), config.max_answer_chars)
        start = raw.get("start")
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            raise InputError("target.start", "must be a non-negative integer character offset into the passage")
        start += len(raw["text"]) - len(raw["text"].lstrip())  # the span was trimmed on the left
        passage = self.passage(config, context)
        if passage[start : start + len(text)] != text:
            raise InputError("target.text", f"does not match the passage at character {start}")
        target: dict[str, Any] = {"text": text, "start": start}
        alternatives = raw.get("alternatives")
        if alternatives is not None and not isinstance(alternatives, list):
            raise InputError("target.alternatives", "must be a list of answer texts")
        if alternatives and len(alternatives) > MAX_ALTERNATIVES:
            raise InputError("target.alternatives", f"has {len(alternatives)} answers; at most {MAX_ALTERNATIVES} are accepted")
        if alternatives:
            target["alternatives"] = [clean_text("target.alternatives", a, config.max_answer_chars) for a in alternatives]
        return target

    def model_input(self, config: QAConfig, context: dict[str, Any], inputs: dict[str, str]) -> dict[str, str]:
        return {"question": inputs[config.input_fields[0]], "context": self.passage(config, context)}

    def is_fooled(self, config: QAConfig, target: dict[str, Any], prediction: dict[str, Any]) -> bool:
        return f1_score(prediction.get("text", ""), target["text"]) < config.f1_threshold

    def evaluate(self, config: QAConfig, targets: list[dict[str, Any]], predictions: list[dict[str, Any]]) -> dict[str, float]:
        if not targets:
            return {"exact_match": 0.0, "f1": 0.0}
        em = f1 = 0.0
        for target, prediction in zip(targets, predictions, strict=True):
            golds = answer_texts(target)
            em += max(exact_match(prediction.get("text", ""), g) for g in golds)
            f1 += max(f1_score(prediction.get("text", ""), g) for g in golds)
        return {"exact_match": em / len(targets), "f1": f1 / len(targets)}

    def target_label(self, target: dict[str, Any]) -> str:
        return target["text"]
