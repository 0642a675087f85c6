"""An encoder + mean pooling + a fresh linear head, optionally with its lower blocks frozen.

The weak scorer fine-tuned for one epoch (`hardness.scorers.finetuned_scorer`) is one; the Hard-Bench
reproduction's target model (`research.hardbench.target`) is another. With `trainable_blocks`, only the top
blocks and the head train and the lower blocks stay at their pretrained weights (no dropout there either), so
their outputs can be computed once and reused (`EncoderClassifier.lower`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from hardness.encoding import additive_mask, mean_pool


class EncoderClassifier(nn.Module):
    def __init__(self, encoder, n_labels: int, trainable_blocks: int | None = None):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.config.hidden_size, n_labels)
        n_layers = len(encoder.encoder.layer)
        self.split = 0 if trainable_blocks is None else max(0, n_layers - trainable_blocks)
        for module in (encoder.embeddings, *encoder.encoder.layer[: self.split]) if self.split else ():
            module.requires_grad_(False)

    def train(self, mode: bool = True) -> EncoderClassifier:
        super().train(mode)
        if self.split:  # frozen blocks never use dropout, so their outputs can be cached
            self.encoder.embeddings.eval()
            for layer in self.encoder.encoder.layer[: self.split]:
                layer.eval()
        return self

    def lower(self, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Output of the frozen part (embeddings + lower blocks), without autograd."""
        with torch.no_grad():
            hidden = self.encoder.embeddings(input_ids=input_ids)
            ext = additive_mask(mask, hidden.dtype)
            for layer in self.encoder.encoder.layer[: self.split]:
                hidden = layer(hidden, ext)
        return hidden

    def upper(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        ext = additive_mask(mask, hidden.dtype)
        for layer in self.encoder.encoder.layer[self.split :]:
            hidden = layer(hidden, ext)
        return self.head(mean_pool(hidden, mask))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if not self.split:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return self.head(mean_pool(hidden, attention_mask))
        return self.upper(self.lower(input_ids, attention_mask), attention_mask)


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 3
    encoder_lr: float = 5e-5
    head_lr: float = 1e-3  # a fresh head on good sentence features learns fast; few-shot runs need it
    batch_size: int | None = None  # None: 8 for up to 128 examples, else 16
    trainable_blocks: int | None = 2
    min_steps: int = 24  # tiny k-shot sets get more epochs, so that k=16 sees a few dozen updates too
    seed: int = 0

    def epochs_for(self, n: int, batch_size: int) -> int:
        steps_per_epoch = -(-n // batch_size)
        return max(self.epochs, -(-self.min_steps // steps_per_epoch))


def shuffled_batches(tokenizer, texts: Sequence[str], labels: np.ndarray, batch_size: int, gen: torch.Generator):
    order = torch.randperm(len(texts), generator=gen).numpy()
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        enc = tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=64, return_tensors="pt")
        yield enc["input_ids"], enc["attention_mask"], torch.from_numpy(labels[idx])


def make_optimizer(model: EncoderClassifier, config: TrainConfig) -> torch.optim.Optimizer:
    body = [p for p in model.encoder.parameters() if p.requires_grad]
    return torch.optim.AdamW([{"params": body, "lr": config.encoder_lr},
                              {"params": model.head.parameters(), "lr": config.head_lr}], weight_decay=0.01)


def train_epoch(model: EncoderClassifier, opt, tokenizer, texts, labels, batch_size: int, gen) -> None:
    model.train()
    for ids, mask, y in shuffled_batches(tokenizer, texts, labels, batch_size, gen):
        opt.zero_grad()
        nn.functional.cross_entropy(model(ids, mask), y).backward()
        opt.step()
