"""The target model of the reproduction: the encoder fine-tuned with its own, fresh linear head.

By default only the top `trainable_blocks` blocks and the head train; the lower blocks stay at their
pretrained weights, so their outputs on the dev set are computed once and shared by every run (the
reproduction runs 36 of them on a shared 2-core CPU). `trainable_blocks=None` fine-tunes everything.
The target differs from the weak scorer (frozen encoder + a linear head trained one epoch on all data) in
what is trained, so a hard set is not hard merely because the target repeats the scorer's fixed features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from hardness.classifier import EncoderClassifier, TrainConfig, make_optimizer, train_epoch
from hardness.encoding import device_of, length_sorted_batches


@dataclass(frozen=True)
class TargetResult:
    epoch_accuracy: list[float]

    @property
    def best(self) -> float:
        return max(self.epoch_accuracy)

    @property
    def final(self) -> float:
        return self.epoch_accuracy[-1]


@dataclass
class EvalSet:
    """Dev batches with the frozen part's output precomputed (valid for every run from the same weights)."""

    batches: list[tuple[np.ndarray, torch.Tensor, torch.Tensor]]  # (index, lower hidden or ids, mask)
    labels: np.ndarray
    split: int


def prepare_eval(encoder, tokenizer, texts: Sequence[str], labels: np.ndarray, config: TrainConfig) -> EvalSet:
    probe = EncoderClassifier(encoder, 2, config.trainable_blocks)
    probe.eval()
    device = device_of(encoder)
    batches = []
    for b in length_sorted_batches(tokenizer, texts, 128):
        ids, mask = b.input_ids.to(device), b.attention_mask.to(device)
        batches.append((b.index, probe.lower(ids, mask) if probe.split else ids, mask))
    encoder.requires_grad_(True)  # the probe froze parts of the shared encoder; undo for the caller
    return EvalSet(batches, labels, probe.split)


@torch.inference_mode()
def accuracy(model: EncoderClassifier, dev: EvalSet) -> float:
    model.eval()
    pred = np.zeros(len(dev.labels), dtype=np.int64)
    for index, x, mask in dev.batches:
        logits = model.upper(x, mask) if model.split else model(x, mask)
        pred[index] = logits.argmax(-1).cpu().numpy()
    return float((pred == dev.labels).mean())


def train_target(
    encoder, tokenizer, texts: Sequence[str], labels: np.ndarray, dev: EvalSet, n_labels: int, config: TrainConfig,
) -> TargetResult:
    """Fine-tune `encoder` (a fresh copy the caller gives away) + a new head; dev accuracy after every epoch."""
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    model = EncoderClassifier(encoder, n_labels, config.trainable_blocks)
    assert model.split == dev.split, "the evaluation set was prepared for another split"
    opt = make_optimizer(model, config)
    batch_size = config.batch_size or (8 if len(texts) <= 128 else 16)
    accs = []
    for _ in range(config.epochs_for(len(texts), batch_size)):
        train_epoch(model, opt, tokenizer, texts, labels, batch_size, gen)
        accs.append(accuracy(model, dev))
    return TargetResult(accs)
