"""A linear softmax head trained on frozen features: the weak scorer of Hard-Bench (one epoch only)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn


@dataclass
class HeadTraining:
    head: nn.Linear
    epoch_probs: list[np.ndarray] = field(default_factory=list)  # probabilities after each epoch (data maps)
    start_probs: np.ndarray | None = None  # probabilities of the untrained head (record_start)
    steps: int = 0  # optimiser updates made


def probs_of(head: nn.Linear, features: np.ndarray) -> np.ndarray:
    """Softmax of the head on `features`, computed where the head is (a fine-tuned scorer's head may be on a GPU)."""
    with torch.no_grad():
        x = torch.from_numpy(features)
        if head.weight.device.type != "cpu":
            x = x.to(head.weight.device)
        return torch.softmax(head(x), dim=-1).cpu().numpy()


def train_linear_head(
    features: np.ndarray,
    labels: np.ndarray,
    n_labels: int,
    *,
    epochs: int = 1,
    seed: int = 0,
    lr: float = 1e-3,
    batch_size: int = 32,
    record_epochs: bool = False,
    record_start: bool = False,
) -> HeadTraining:
    """Adam on cross-entropy, shuffled by `seed`; one epoch by default (the early stop that makes it weak)."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    head = nn.Linear(features.shape[1], n_labels)
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    x, y = torch.from_numpy(features), torch.from_numpy(labels)
    result = HeadTraining(head, start_probs=probs_of(head, features) if record_start else None)
    for _ in range(epochs):
        for idx in torch.randperm(len(y), generator=gen).split(batch_size):
            opt.zero_grad()
            nn.functional.cross_entropy(head(x[idx]), y[idx]).backward()
            opt.step()
            result.steps += 1
        if record_epochs:
            result.epoch_probs.append(probs_of(head, features))
    return result
