"""Sequence classification: one label of the task's label set per input (text, or a text pair)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import AutoModelForSequenceClassification

from zoo.heads.base import Example, ExplainedLogits, HeadSpec, OcclusionTarget


class ClassificationHead(HeadSpec):
    name = "classification"
    auto_model = AutoModelForSequenceClassification
    architecture_suffix = "ForSequenceClassification"
    default_max_length = 128
    default_strategy = "mean_probs"
    target_keys = ("labels",)
    labelled = True
    probabilities = True
    # A few dozen demo rows need several small-batch epochs to move a classifier off uniform
    # (3 epochs of batch 16 left it at ~35 % confidence).
    small_data_epochs = 8
    # the round pipeline's retraining: lr 1e-4 and the checkpoint with the fewest dev mistakes beat lr 2e-4 with
    # the lowest dev loss on 2,000 collected examples (SST-2 dev 0.839 vs 0.830; the full recipe 0.836;
    # docs/benchmarks/rounds.md)
    recipe_defaults = {"lr": 1e-4, "select_on": "error"}

    def check_labels(self, labels: Sequence[str]) -> None:
        if len(labels) < 2:
            raise ValueError("a classifier needs at least two labels")

    def config_overrides(self, labels: Sequence[str]) -> dict[str, Any]:
        return {"num_labels": len(labels), "id2label": dict(enumerate(labels)),
                "label2id": {label: i for i, label in enumerate(labels)}}

    def features(self, tokenizer: Any, examples: Sequence[Example], labels: Sequence[str],
                 max_length: int) -> list[dict[str, Any]]:
        index = {label: i for i, label in enumerate(labels)}
        features = []
        for ex in examples:
            text, pair = self.segments(ex.model_input)
            feature = dict(tokenizer(text, pair, truncation=True, max_length=max_length))
            feature["labels"] = index[ex.target]
            features.append(feature)
        return features

    def decode(self, encoding: Any, output: Any, inputs: Sequence[dict[str, str]],
               labels: Sequence[str]) -> list[dict[str, Any]]:
        return [_label(p, labels) for p in torch.softmax(output.logits.float(), dim=-1)]

    def target_of(self, prediction: dict[str, Any]) -> str:
        return prediction["label"]

    def ensemble_target(self, predictions: Sequence[dict[str, Any]]) -> str:
        """The label with the highest mean probability (ties: the first label), as `mean_probs` aggregates."""
        labels = list(predictions[0]["probs"])
        return max(labels, key=lambda label: sum(p["probs"].get(label, 0.0) for p in predictions))

    def occlusion_target(self, target: str, labels: Sequence[str], offsets: list[list[int]],
                         seq_ids: list[int | None]) -> OcclusionTarget:
        return OcclusionTarget(lambda output, rows, seq: torch.softmax(output.logits.float(), dim=-1))

    def explained_logits(self, target: str, labels: Sequence[str], offsets: list[list[int]],
                         seq_ids: list[int | None]) -> ExplainedLogits:
        index = list(labels).index(target)
        return ExplainedLogits(target, {"words": lambda o: o.logits[:, index]})


def _label(probs: torch.Tensor, labels: Sequence[str]) -> dict[str, Any]:
    values = probs.tolist()
    best = max(range(len(values)), key=values.__getitem__)
    return {"label": labels[best], "probs": dict(zip(labels, values, strict=True))}
