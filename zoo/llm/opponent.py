"""A language model as a classifier: each label's score is the log-probability of its label word after a prompt
built from the task's instructions and the example's fields (zoo.llm.prompts.opponent_prompt), plus a per-label
offset fitted on a dev split (`fit_offsets`). Its probabilities are the softmax of those sums, so it predicts in
the same format as the encoder classifiers (`{"label", "probs"}`) and is evaluated, shown and ranked like them.

Offsets. A small model prefers some label words whatever the input (the packaged 135M one answers "negative"
for most SST-2 sentences under one wording, "positive" under another); the offsets undo that bias. They minimise
the cross-entropy of softmax(score + offset) on the dev rows (convex; the first label's offset stays 0), with a
small L2 pull toward 0 so a label missing from a small dev split cannot run off.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize

from zoo.llm.base import Provider
from zoo.llm.prompts import label_word, opponent_prompt

L2 = 1e-3


def softmax(values: Sequence[float]) -> list[float]:
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    total = sum(exps)
    return [e / total for e in exps]


class LLMClassifier:
    def __init__(self, provider: Provider, labels: Sequence[str], instructions: str = "",
                 label_words: Mapping[str, str] | None = None, offsets: Mapping[str, float] | None = None,
                 field_names: Sequence[str] = ("Text", "Second text")):
        self.provider = provider
        self.labels = list(labels)
        self.instructions = instructions
        self.label_words = dict(label_words or {})
        self.offsets = {label: float((offsets or {}).get(label, 0.0)) for label in self.labels}
        self.field_names = tuple(field_names)
        self.words = [label_word(label, self.label_words) for label in self.labels]

    def raw_scores(self, model_inputs: Sequence[Mapping[str, str]]) -> list[dict[str, float]]:
        """log P(label word | prompt) per label, one provider call per input."""
        out = []
        for model_input in model_inputs:
            system, user = opponent_prompt(self.instructions, self.labels, model_input, self.label_words,
                                           self.field_names)
            scores = self.provider.score(user, self.words, system=system)
            out.append(dict(zip(self.labels, scores.logprobs, strict=True)))
        return out

    def probabilities(self, raw: Mapping[str, float]) -> dict[str, float]:
        return dict(zip(self.labels, softmax([raw[label] + self.offsets[label] for label in self.labels]),
                        strict=True))

    def predict(self, model_inputs: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
        out = []
        for raw in self.raw_scores(model_inputs):
            probs = self.probabilities(raw)
            out.append({"label": max(self.labels, key=probs.__getitem__), "probs": probs})
        return out

    def describe(self) -> dict[str, Any]:
        return {**self.provider.describe(), "labels": self.labels, "label_words": dict(zip(self.labels, self.words,
                                                                                          strict=True)),
                "offsets": self.offsets}


def fit_offsets(raw: Sequence[Mapping[str, float]], gold: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """Per-label offsets minimising the cross-entropy of softmax(score + offset) on (raw, gold) rows."""
    labels = list(labels)
    if not raw:
        return {label: 0.0 for label in labels}
    scores = np.array([[row[label] for label in labels] for row in raw], dtype=float)
    index = {label: i for i, label in enumerate(labels)}
    targets = np.array([index[g] for g in gold])

    def loss(free: np.ndarray) -> tuple[float, np.ndarray]:
        offsets = np.concatenate([[0.0], free])
        logits = scores + offsets
        logits -= logits.max(axis=1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        value = -log_probs[np.arange(len(targets)), targets].mean() + L2 * float(free @ free)
        probs = np.exp(log_probs)
        probs[np.arange(len(targets)), targets] -= 1.0
        grad = probs.mean(axis=0)[1:] + 2 * L2 * free
        return float(value), grad

    result = minimize(loss, np.zeros(len(labels) - 1), jac=True, method="L-BFGS-B")
    return {label: (0.0 if i == 0 else round(float(result.x[i - 1]), 6)) for i, label in enumerate(labels)}


def accuracy(raw: Sequence[Mapping[str, float]], gold: Sequence[str], offsets: Mapping[str, float] | None = None,
             labels: Sequence[str] | None = None) -> float:
    if not raw:
        return 0.0
    labels = list(labels or raw[0])
    offsets = offsets or {}
    hits = sum(max(labels, key=lambda label: row[label] + offsets.get(label, 0.0)) == g for row, g in zip(raw, gold,
                                                                                                      strict=True))
    return hits / len(raw)
