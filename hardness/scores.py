"""Hardness scores as strategies behind one registry. Higher score = harder, for every entry.

A score reads what it needs from a `ScoringContext`: the weak scorer's probabilities and features, and
lazily computed extras (several early-stopped runs for EL2N, per-epoch probabilities for data maps, the
deep per-sample gradient norms). Adding a score is adding one decorated function. The names a task's seeding may
use are written in `tasks.choices` (the task settings, below this app, accept them); this registry holds them,
checked when this module loads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tasks import choices
from zoo.registry import Registry

EPS = 1e-12


@dataclass
class ScoringContext:
    labels: np.ndarray | None  # None for an unlabelled pool (contexts)
    probs: np.ndarray  # (n, n_labels) of the weak scorer
    features: np.ndarray | None = None  # (n, d): the input h of the scorer's linear head
    providers: dict[str, Callable[[], Any]] = field(default_factory=dict)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def get(self, name: str) -> Any:
        if name not in self._cache:
            if name not in self.providers:
                raise KeyError(f"this score needs {name!r}, which the caller did not provide")
            self._cache[name] = self.providers[name]()
        return self._cache[name]

    def gold(self) -> np.ndarray:
        if self.labels is None:
            raise ValueError("this score needs gold labels; use a label-free score (entropy, margin) instead")
        return self.labels


@dataclass(frozen=True)
class ScoreSpec:
    name: str
    fn: Callable[[ScoringContext], np.ndarray]
    needs_labels: bool
    doc: str


SCORES: Registry[ScoreSpec] = Registry("score")
# Scores that read the scorer's features (the input of its linear head), which the caller then computes.
FEATURE_SCORES: frozenset[str] = frozenset({choices.GRADNORM, choices.AFLITE})


def register(name: str, *, needs_labels: bool = True) -> Callable:
    """@register(name) adds the decorated function as the score `name` (its docstring says what it measures)."""
    def wrap(fn: Callable[[ScoringContext], np.ndarray]) -> Callable[[ScoringContext], np.ndarray]:
        SCORES.register(name, ScoreSpec(name, fn, needs_labels, (fn.__doc__ or "").strip()))
        return fn

    return wrap


def compute(name: str, ctx: ScoringContext) -> np.ndarray:
    return np.asarray(SCORES.lookup(name).fn(ctx), dtype=np.float64)


def label_free_scores() -> list[str]:
    return sorted(name for name, spec in SCORES.items() if not spec.needs_labels)


# --- building blocks (pure numpy) -------------------------------------------------------------------------


def onehot(labels: np.ndarray, n_labels: int) -> np.ndarray:
    return np.eye(n_labels, dtype=np.float64)[labels]


def loss_of(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return -np.log(np.clip(probs[np.arange(len(labels)), labels], EPS, None))


def error_norm(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """‖p − onehot(y)‖₂ per row (the EL2N score of one run)."""
    return np.linalg.norm(probs - onehot(labels, probs.shape[1]), axis=1)


def head_gradnorm(probs: np.ndarray, features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per-example norm of d loss / d(W, b) for z = W h + b: the gradient is (p − y) hᵀ and (p − y), so
    its Frobenius norm is ‖p − y‖ · sqrt(‖h‖² + 1). No backward pass needed."""
    h2 = np.einsum("ij,ij->i", features.astype(np.float64), features.astype(np.float64))
    return error_norm(probs, labels) * np.sqrt(h2 + 1.0)


@dataclass(frozen=True)
class DataMap:
    confidence: np.ndarray  # mean over epochs of p(gold)
    variability: np.ndarray  # population std over epochs of p(gold)
    correctness: np.ndarray  # share of epochs whose argmax is the gold label


def data_map(epoch_probs: list[np.ndarray], labels: np.ndarray) -> DataMap:
    """Swayamdipta et al. (2020) training-dynamics statistics from per-epoch probabilities."""
    stacked = np.stack(epoch_probs)  # (epochs, n, n_labels)
    rows = np.arange(len(labels))
    gold = stacked[:, rows, labels]
    correct = stacked.argmax(-1) == labels[None, :]
    return DataMap(gold.mean(0), gold.std(0), correct.mean(0))


# --- the registry ------------------------------------------------------------------------------------------


@register(choices.LOSS)
def _loss(ctx: ScoringContext) -> np.ndarray:
    """Cross-entropy of the gold label under the weak scorer."""
    return loss_of(ctx.probs, ctx.gold())


@register(choices.GRADNORM)
def _gradnorm(ctx: ScoringContext) -> np.ndarray:
    """Gradient norm over the linear head (closed form ‖p − y‖·sqrt(‖h‖² + 1))."""
    if ctx.features is None:
        raise KeyError("gradnorm needs the scorer's head features")
    return head_gradnorm(ctx.probs, ctx.features, ctx.gold())


@register(choices.GRADNORM_DEEP)
def _gradnorm_deep(ctx: ScoringContext) -> np.ndarray:
    """Per-sample gradient norm over the top encoder block and the head (torch.func, batched)."""
    return np.asarray(ctx.get("gradnorm_deep"))


@register(choices.EL2N)
def _el2n(ctx: ScoringContext) -> np.ndarray:
    """‖p − onehot(y)‖ averaged over several early-stopped runs (Paul et al. 2021)."""
    runs = ctx.get("el2n_runs")
    return np.mean([error_norm(p, ctx.gold()) for p in runs], axis=0)


@register(choices.AFLITE)
def _aflite(ctx: ScoringContext) -> np.ndarray:
    """AFLite (Le Bras et al. 2020) over the scorer's frozen features: m = 64 logistic-regression probes per
    iteration, τ = 0.75; what the filter keeps scores highest, then what it removed last (hardness.aflite)."""
    from hardness.aflite import aflite, hardness_scores

    if ctx.features is None:
        raise KeyError("aflite needs the scorer's features (the frozen embeddings)")
    return hardness_scores(aflite(ctx.features, ctx.gold()))


@register("datamap_low_confidence")
def _low_confidence(ctx: ScoringContext) -> np.ndarray:
    """1 − data-map confidence (hard-to-learn examples score high)."""
    return 1.0 - data_map(ctx.get("epoch_probs"), ctx.gold()).confidence


@register("datamap_variability")
def _variability(ctx: ScoringContext) -> np.ndarray:
    """Data-map variability (ambiguous examples score high)."""
    return data_map(ctx.get("epoch_probs"), ctx.gold()).variability


@register("entropy", needs_labels=False)
def _entropy(ctx: ScoringContext) -> np.ndarray:
    """Predictive entropy of the scorer (label-free: for contexts and unlabelled pools)."""
    p = np.clip(ctx.probs, EPS, 1.0)
    return -(p * np.log(p)).sum(1)


@register("margin", needs_labels=False)
def _margin(ctx: ScoringContext) -> np.ndarray:
    """1 − (p_top1 − p_top2): small margins between the two likeliest labels score high (label-free)."""
    top = np.sort(ctx.probs, axis=1)[:, -2:]
    return 1.0 - (top[:, 1] - top[:, 0])


SCORES.require(choices.SEEDING_SCORES)  # every score a task's seeding may name
