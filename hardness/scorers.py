"""Weak scorers, and the small protocol any scorer (e.g. the model zoo's round model) has to meet.

Scorer protocol — what `seed_round` and `score_inputs` call:

    labels: Sequence[str]                                  # the label names, in probability column order
    predict_proba(inputs: Sequence[Mapping[str, str]]) -> np.ndarray   # (n, len(labels)), rows sum to 1

`inputs` are the task kind's model inputs ({"text": ..., "text_pair"?: ...}, as in zoo/types.py).
A scorer that also exposes its linear head (`head: nn.Linear`) and `features(inputs) -> (n, d)` (the head's
input h) is a `FeatureScorer` and supports the closed-form `gradnorm` as well. A bare callable
`inputs -> probs` is accepted too, through `as_scorer(fn, labels)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from hardness.classifier import EncoderClassifier, TrainConfig, make_optimizer, train_epoch
from hardness.encoding import embed_texts
from hardness.heads import probs_of, train_linear_head

Inputs = Sequence[Mapping[str, str]]


@runtime_checkable
class Scorer(Protocol):
    labels: Sequence[str]

    def predict_proba(self, inputs: Inputs) -> np.ndarray: ...


@runtime_checkable
class FeatureScorer(Scorer, Protocol):
    head: nn.Linear

    def features(self, inputs: Inputs) -> np.ndarray: ...


@dataclass
class CallableScorer:
    fn: Callable[[Inputs], np.ndarray]
    labels: Sequence[str]

    def predict_proba(self, inputs: Inputs) -> np.ndarray:
        return np.asarray(self.fn(inputs), dtype=np.float64)


def as_scorer(obj: Scorer | Callable[[Inputs], np.ndarray], labels: Sequence[str]) -> Scorer:
    if isinstance(obj, Scorer):
        return obj
    if callable(obj):
        return CallableScorer(obj, list(labels))
    raise TypeError(f"{obj!r} is neither a Scorer nor a callable returning probabilities")


def input_text(inp: Mapping[str, str], sep: str = " [SEP] ") -> str:
    """One string per model input; a text pair is joined with the separator token (for display only: scorers
    encode a pair as two segments, `segments`)."""
    return inp["text"] + (sep + inp["text_pair"] if inp.get("text_pair") else "")


def segments(inp: Mapping[str, str]) -> str | tuple[str, str]:
    """What the tokenizer is given for a model input: its text, or (text, text_pair) as two segments."""
    return (inp["text"], inp["text_pair"]) if inp.get("text_pair") else inp["text"]


@dataclass
class HeadScorer:
    """An encoder (frozen, or fine-tuned one epoch) + mean pooling + a linear head."""

    encoder: nn.Module
    tokenizer: object
    head: nn.Linear
    labels: Sequence[str]

    def features(self, inputs: Inputs) -> np.ndarray:
        return embed_texts(self.encoder, self.tokenizer, [segments(i) for i in inputs])

    def predict_proba(self, inputs: Inputs) -> np.ndarray:
        return probs_of(self.head, self.features(inputs)).astype(np.float64)


def frozen_head_scorer(
    encoder, tokenizer, features: np.ndarray, labels: np.ndarray, label_names: Sequence[str], seed: int = 0
) -> HeadScorer:
    """Weak scorer 1: the frozen encoder's features, a linear head trained for one epoch."""
    head = train_linear_head(features, labels, len(label_names), epochs=1, seed=seed).head
    return HeadScorer(encoder, tokenizer, head, list(label_names))


def finetuned_scorer(
    encoder, tokenizer, texts: Sequence[str], labels: np.ndarray, label_names: Sequence[str], seed: int = 0
) -> HeadScorer:
    """Weak scorer 2: the encoder fine-tuned with a head for one epoch over all the data."""
    torch.manual_seed(seed)
    config = TrainConfig(epochs=1, batch_size=32, trainable_blocks=None, seed=seed)
    model = EncoderClassifier(encoder, len(label_names), config.trainable_blocks)
    opt = make_optimizer(model, config)
    train_epoch(model, opt, tokenizer, texts, labels, 32, torch.Generator().manual_seed(seed))
    model.eval()
    return HeadScorer(model.encoder, tokenizer, model.head, list(label_names))
