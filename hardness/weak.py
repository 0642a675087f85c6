"""The weak scorer of Hard-Bench, trained on the candidate pool it then scores.

Classification (one text, or a pair such as NLI's premise + hypothesis, encoded as two segments): the frozen
encoder's mean-pooled features + a linear head trained with Adam on the pool. QA: the frozen encoder's token
features of (question, passage) + a linear start/end head, trained on the pool with the span loss (start +
end cross-entropy). Both train for one epoch — the early stop that makes the scorer weak — or, on a small
pool, for as many passes as it takes to make `min_steps` updates (a 60-item pool at batch 32 would otherwise
get 2 updates and score with an almost untrained head). EL2N averages the error norm of `runs` heads trained
the same way with seeds `seed`, `seed + 1`, … (Paul et al. 2021).

The encoder is any of `zoo.encoders` (the caller's, or `hardness.services.weak_encoder(name)`), on its device
(`zoo.device`): batches follow it there, and only figures come back to the CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from hardness.encoding import device_of, embed_texts, frozen_autocast, hidden_size
from hardness.heads import HeadTraining, probs_of, train_linear_head
from hardness.scorers import HeadScorer, segments
from tasks import choices

EL2N_RUNS = 3
SPAN_MAX_LENGTH = 256
EPS = 1e-12


@dataclass(frozen=True)
class Schedule:
    batch_size: int
    epochs: int


def schedule(n: int, min_steps: int, batch_size: int = 32, small_batch: int = 8) -> Schedule:
    """One epoch at `batch_size`; a pool under 8 batches uses batches of `small_batch`, and a pool that
    still gives fewer than `min_steps` updates in one epoch gets more epochs (ceil(min_steps / updates))."""
    batch = batch_size if n >= 8 * batch_size else small_batch
    per_epoch = max(1, -(-n // batch))
    return Schedule(batch, max(1, -(-min_steps // per_epoch)))


@dataclass(frozen=True)
class TrainingReport:
    """What the weak scorer was trained on and how: shown in the pipeline's log, and checked by tests."""

    n_train: int
    epochs: int
    steps: int
    batch_size: int
    loss_before: float  # mean loss on the pool of the untrained head
    loss_after: float  # the same after training

    def describe(self) -> str:
        return (f"trained on the {self.n_train} sampled pool items: {self.epochs} epoch(s), {self.steps} updates "
                f"at batch {self.batch_size}; mean pool loss {self.loss_before:.3f} → {self.loss_after:.3f}")


def _mean_loss(probs: np.ndarray, labels: np.ndarray) -> float:
    return float(-np.log(np.clip(probs[np.arange(len(labels)), labels], EPS, None)).mean())


# --- classification ---------------------------------------------------------------------------------------


@dataclass
class WeakClassifier(HeadScorer):
    """A `HeadScorer` that knows the pool it was trained on (its features, and every run's probabilities)."""

    training: TrainingReport | None = None
    train_inputs: list[Mapping[str, str]] = field(default_factory=list)
    pool_features: np.ndarray | None = None
    run_probs: list[np.ndarray] = field(default_factory=list)  # probabilities on the pool, one per run


def fit_weak_classifier(
    encoder, tokenizer, inputs: Sequence[Mapping[str, str]], labels: np.ndarray, label_names: Sequence[str],
    *, min_steps: int = 50, seed: int = 0, runs: int = 1,
) -> WeakClassifier:
    """Train the weak scorer on exactly `inputs` (the sampled pool), `runs` heads with seeds seed, seed+1, …"""
    if len(inputs) == 0:
        raise ValueError("the pool is empty: nothing to train the weak scorer on")
    encoder.eval()
    feats = embed_texts(encoder, tokenizer, [segments(i) for i in inputs])
    plan = schedule(len(inputs), min_steps)
    trainings: list[HeadTraining] = [
        train_linear_head(feats, labels, len(label_names), epochs=plan.epochs, seed=seed + r,
                          batch_size=plan.batch_size, record_start=r == 0)
        for r in range(max(1, runs))
    ]
    run_probs = [probs_of(t.head, feats).astype(np.float64) for t in trainings]
    first = trainings[0]
    report = TrainingReport(len(inputs), plan.epochs, first.steps, plan.batch_size,
                            _mean_loss(first.start_probs, labels), _mean_loss(run_probs[0], labels))
    return WeakClassifier(encoder, tokenizer, first.head, list(label_names), report, list(inputs), feats, run_probs)


# --- extractive QA ----------------------------------------------------------------------------------------


@dataclass
class _SpanBatch:
    index: np.ndarray
    encoding: dict[str, torch.Tensor]
    start: torch.Tensor
    end: torch.Tensor


@dataclass
class _Example:
    model_input: dict[str, str]
    target: Any


def span_batches(tokenizer, inputs: Sequence[Mapping[str, str]], targets: Sequence[Mapping[str, Any]],
                 batch_size: int, max_length: int = SPAN_MAX_LENGTH) -> list[_SpanBatch]:
    """(question, passage) pairs tokenised as the QA head does (passage truncated, never the question), with the
    gold span's token positions ([CLS] when the answer was truncated away); length-sorted, padded per batch."""
    from zoo.heads import get_head  # the QA head's tokenisation and span mapping (read-only use)

    head = get_head("qa")
    feats = head.features(tokenizer, [_Example(dict(i), t) for i, t in zip(inputs, targets, strict=True)], [],
                          max_length)
    order = np.argsort([len(f["input_ids"]) for f in feats], kind="stable")
    batches = []
    for lo in range(0, len(order), batch_size):
        index = order[lo : lo + batch_size]
        rows = [{k: v for k, v in feats[i].items() if k not in ("start_positions", "end_positions")} for i in index]
        enc = tokenizer.pad(rows, return_tensors="pt")
        batches.append(_SpanBatch(index, dict(enc), torch.tensor([feats[i]["start_positions"] for i in index]),
                                  torch.tensor([feats[i]["end_positions"] for i in index])))
    return batches


def _span_logits(head: nn.Linear, hidden: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    logits = head(hidden).masked_fill(~mask.bool()[..., None], torch.finfo(hidden.dtype).min)
    return logits[..., 0], logits[..., 1]


@dataclass
class WeakSpanScorer:
    """Frozen token features + a linear start/end head trained on the pool; scores are per (question, answer)."""

    head: nn.Linear
    training: TrainingReport
    train_inputs: list[Mapping[str, str]]
    # per pool item, from every run: (start probs, end probs, gold start, gold end, hidden) are reduced to
    # the figures below as soon as a batch is scored, so nothing token-sized is kept
    span_loss: np.ndarray
    run_error_norms: list[np.ndarray]
    head_gradnorm: np.ndarray
    wrong: np.ndarray  # the predicted start or end token is not the gold one

    def score(self, name: str) -> np.ndarray:
        if name == choices.LOSS:
            return self.span_loss
        if name == choices.EL2N:
            return np.mean(self.run_error_norms, axis=0)
        if name == choices.GRADNORM:
            return self.head_gradnorm
        raise KeyError(f"score {name!r} is not available for QA; use one of {', '.join(choices.SPAN_SEEDING_SCORES)}")


def fit_weak_span_scorer(
    encoder, tokenizer, inputs: Sequence[Mapping[str, str]], targets: Sequence[Mapping[str, Any]],
    *, min_steps: int = 50, seed: int = 0, runs: int = 1, lr: float = 1e-3, cache_max_items: int = 1000,
) -> WeakSpanScorer:
    """Train the start/end head on exactly `inputs` (the sampled pool) and score every item."""
    if len(inputs) == 0:
        raise ValueError("the pool is empty: nothing to train the weak scorer on")
    encoder.eval()
    device = device_of(encoder)
    plan = schedule(len(inputs), min_steps)
    batches = span_batches(tokenizer, inputs, targets, plan.batch_size)
    if device.type != "cpu":
        batches = [_SpanBatch(b.index, {k: v.to(device) for k, v in b.encoding.items()}, b.start.to(device),
                              b.end.to(device)) for b in batches]
    cache: dict[int, torch.Tensor] = {}

    @torch.no_grad()  # not inference_mode: the head's backward saves these as its input
    def hidden_of(i: int) -> torch.Tensor:
        if i in cache:
            return cache[i]
        with frozen_autocast(device):
            out = encoder(**batches[i].encoding).last_hidden_state.float().clone()
        if len(inputs) <= cache_max_items:
            cache[i] = out
        return out

    def figures(head: nn.Linear) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        n = len(inputs)
        loss, err, gnorm, wrong = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)
        with torch.no_grad():
            for i, b in enumerate(batches):
                h, mask = hidden_of(i), b.encoding["attention_mask"]
                s_logits, e_logits = _span_logits(head, h, mask)
                ps, pe = torch.softmax(s_logits, -1), torch.softmax(e_logits, -1)
                ys = nn.functional.one_hot(b.start, ps.shape[-1]).to(ps.dtype)
                ye = nn.functional.one_hot(b.end, pe.shape[-1]).to(pe.dtype)
                loss[b.index] = (nn.functional.cross_entropy(s_logits, b.start, reduction="none")
                                 + nn.functional.cross_entropy(e_logits, b.end, reduction="none")).cpu().numpy()
                err[b.index] = torch.sqrt((ps - ys).pow(2).sum(-1) + (pe - ye).pow(2).sum(-1)).cpu().numpy()
                # z_t = W h_t + b for start and end: ∂L/∂W_row = Σ_t (p_t − y_t) h_tᵀ, ∂L/∂b_row = Σ_t (p_t − y_t) = 0
                gs, ge = torch.einsum("bt,btd->bd", ps - ys, h), torch.einsum("bt,btd->bd", pe - ye, h)
                gnorm[b.index] = torch.sqrt(gs.pow(2).sum(-1) + ge.pow(2).sum(-1)).cpu().numpy()
                wrong[b.index] = ((ps.argmax(-1) != b.start) | (pe.argmax(-1) != b.end)).cpu().numpy()
        return loss, err, gnorm, wrong

    heads, steps, loss_before = [], 0, float("nan")
    for r in range(max(1, runs)):
        torch.manual_seed(seed + r)
        gen = torch.Generator().manual_seed(seed + r)
        head = nn.Linear(hidden_size(encoder), 2).to(device)
        if r == 0:
            loss_before = float(figures(head)[0].mean())
        opt = torch.optim.Adam(head.parameters(), lr=lr)
        for _ in range(plan.epochs):
            for i in torch.randperm(len(batches), generator=gen).tolist():
                b = batches[i]
                s_logits, e_logits = _span_logits(head, hidden_of(i), b.encoding["attention_mask"])
                loss = nn.functional.cross_entropy(s_logits, b.start) + nn.functional.cross_entropy(e_logits, b.end)
                opt.zero_grad()
                loss.backward()
                opt.step()
                steps += r == 0
        heads.append(head)
    runs_figures = [figures(h) for h in heads]
    loss, _, gnorm, wrong = runs_figures[0]
    report = TrainingReport(len(inputs), plan.epochs, steps, plan.batch_size, loss_before, float(loss.mean()))
    return WeakSpanScorer(heads[0], report, list(inputs), loss, [f[1] for f in runs_figures], gnorm, wrong)
