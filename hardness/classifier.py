"""An encoder + mean pooling + a fresh linear head, optionally with its lower blocks frozen.

The weak scorer fine-tuned for one epoch (`hardness.scorers.finetuned_scorer`) is one; the Hard-Bench
reproduction's target model (`research.hardbench.target`) is another. With `trainable_blocks`, only the top
blocks and the head train and the lower part (embeddings, the modules before the first layer, the shared
relative-position modules, the lower blocks: `zoo.families.trunk_modules`) stays at its pretrained weights (no
dropout there either), so its outputs can be computed once and reused (`EncoderClassifier.lower`).

Any family of `zoo.encoders` works: the lower part and the top blocks run through the family's own forward code
(`zoo.families.trunk_view` / `run_layers`). A family that cannot be split (ALBERT: one layer group reused at
every depth, so its "top blocks" are its bottom ones too) is not split: the whole encoder trains with the head
(`split_note` says why), which is correct, only slower.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from hardness.encoding import device_of, hidden_size, mean_pool
from zoo import families


class EncoderClassifier(nn.Module):
    def __init__(self, encoder, n_labels: int, trainable_blocks: int | None = None):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(hidden_size(encoder), n_labels).to(device_of(encoder))
        problem = families.split_problem(encoder) if trainable_blocks is not None else None
        self.split_note = f"not split, the whole encoder trains: {problem}" if problem else ""
        if trainable_blocks is None or problem:
            self.split = 0
        else:
            self.split = max(0, len(families.layers(encoder)) - trainable_blocks)
        for module in self._frozen():
            module.requires_grad_(False)

    def _frozen(self) -> list[nn.Module]:
        return families.trunk_modules(self.encoder, self.split) if self.split else []

    def train(self, mode: bool = True) -> EncoderClassifier:
        super().train(mode)
        for module in self._frozen():  # frozen parts never use dropout, so their outputs can be cached
            module.eval()
        return self

    def lower(self, input_ids: torch.Tensor, mask: torch.Tensor,
              token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Output of the frozen part (embeddings + lower blocks), without autograd."""
        inputs = {"input_ids": input_ids, "attention_mask": mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        with torch.no_grad():
            return families.trunk_view(self.encoder, self.split)(**inputs).last_hidden_state

    def upper(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(mean_pool(families.run_layers(self.encoder, hidden, mask, self.split), mask))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        if not self.split:
            inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                inputs["token_type_ids"] = token_type_ids
            hidden = self.encoder(**inputs).last_hidden_state
            return self.head(mean_pool(hidden, attention_mask))
        return self.upper(self.lower(input_ids, attention_mask, token_type_ids), attention_mask)


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


def shuffled_batches(tokenizer, texts: Sequence[str], labels: np.ndarray, batch_size: int, gen: torch.Generator,
                     device: torch.device | None = None):
    order = torch.randperm(len(texts), generator=gen).numpy()
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        enc = tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=64, return_tensors="pt")
        ids, mask, y = enc["input_ids"], enc["attention_mask"], torch.from_numpy(labels[idx])
        if device is not None and device.type != "cpu":
            ids, mask, y = ids.to(device), mask.to(device), y.to(device)
        yield ids, mask, y


def make_optimizer(model: EncoderClassifier, config: TrainConfig) -> torch.optim.Optimizer:
    body = [p for p in model.encoder.parameters() if p.requires_grad]
    return torch.optim.AdamW([{"params": body, "lr": config.encoder_lr},
                              {"params": model.head.parameters(), "lr": config.head_lr}], weight_decay=0.01)


def train_epoch(model: EncoderClassifier, opt, tokenizer, texts, labels, batch_size: int, gen) -> None:
    model.train()
    for ids, mask, y in shuffled_batches(tokenizer, texts, labels, batch_size, gen, device_of(model)):
        opt.zero_grad()
        nn.functional.cross_entropy(model(ids, mask), y).backward()
        opt.step()
