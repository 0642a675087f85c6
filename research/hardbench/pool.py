"""The pool side of the reproduction: score SST-2 train with the weak scorer, then pick k-shot sets from it.

Everything expensive is cached under `cache_dir` (features, deep scores), so a rerun redoes nothing it has.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from hardness import sanity, scores, selection
from hardness.deep import gradnorm_deep
from hardness.encoding import embed_texts
from hardness.heads import probs_of, train_linear_head
from research.hardbench.data import TextSet, cached_array, load_sst2

# The reproduction's comparison (the paper's: random against the hardest k by three scores), a choice of the study.
DEFAULT_STRATEGIES = ["random", "loss", "gradnorm", "gradnorm_deep"]
# Every score that reads gold labels (the registry's; the label-free ones are for contexts), computed once per pool.
ALL_SCORES = [name for name, spec in scores.SCORES.items() if spec.needs_labels]


@dataclass
class HardbenchConfig:
    data_dir: Path
    out_dir: Path
    cache_dir: Path
    ks: list[int] = field(default_factory=lambda: [16, 64, 500])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    strategies: list[str] = field(default_factory=lambda: list(DEFAULT_STRATEGIES))
    max_train_rows: int | None = None
    epochs: int = 3
    min_steps: int = 24
    trainable_blocks: int | None = 2
    el2n_runs: int = 5
    datamap_epochs: int = 5
    scorer_seed: int = 0
    deep_batch_size: int = 16
    deep_method: str = "ghost"  # or "vmap" (torch.func per-sample grads; same norms, slower on CPU)


@dataclass
class ScoredPool:
    train: TextSet
    dev: TextSet
    probs: np.ndarray
    scores: dict[str, np.ndarray]
    scorer_dev_accuracy: float
    datamap: scores.DataMap


class Timer:
    def __init__(self) -> None:
        self.steps: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.steps[name] = self.steps.get(name, 0.0) + time.perf_counter() - start
        tqdm.write(f"[hardbench] {name}: {self.steps[name]:.1f} s")


def _head_key(head: torch.nn.Linear) -> str:
    blob = b"".join(p.detach().numpy().tobytes() for p in head.parameters())
    return hashlib.sha256(blob).hexdigest()[:12]


def strategy_parts(strategy: str) -> tuple[str, str | None]:
    """'random' → (random, None); 'loss' → (hardest, loss); 'easiest:loss' → (easiest, loss)."""
    if strategy == "random":
        return "random", None
    if ":" in strategy:
        how, score = strategy.split(":", 1)
        return how, score
    return "hardest", strategy


def score_pool(config: HardbenchConfig, encoder, tokenizer, timer: Timer) -> ScoredPool:
    train = load_sst2(config.data_dir, "train", config.max_train_rows)
    dev = load_sst2(config.data_dir, "dev")
    tag = f"sst2-{len(train)}"
    with timer.step("embed train + dev (frozen encoder)"):
        feats = cached_array(config.cache_dir / f"{tag}-train-features.npy",
                              lambda: embed_texts(encoder, tokenizer, train.texts, 128, "embed train"))
        dev_feats = cached_array(config.cache_dir / "sst2-dev-features.npy",
                                  lambda: embed_texts(encoder, tokenizer, dev.texts, 128, "embed dev"))
    with timer.step("weak scorer head (1 epoch) + EL2N runs + data map"):
        head = train_linear_head(feats, train.labels, 2, epochs=1, seed=config.scorer_seed).head
        probs = probs_of(head, feats)
        el2n_runs = [probs_of(train_linear_head(feats, train.labels, 2, seed=100 + s).head, feats)
                     for s in range(config.el2n_runs)]
        epoch_probs = train_linear_head(feats, train.labels, 2, epochs=config.datamap_epochs,
                                        seed=config.scorer_seed, record_epochs=True).epoch_probs
    with timer.step(f"gradnorm_deep (top block + head, {config.deep_method})"):
        deep = cached_array(config.cache_dir / f"{tag}-gradnorm_deep-{_head_key(head)}.npy",
                             lambda: gradnorm_deep(encoder, head, tokenizer, train.texts, train.labels,
                                                   config.deep_batch_size, "gradnorm_deep",
                                                   config.deep_method))
    ctx = scores.ScoringContext(train.labels, probs, feats, providers={
        "el2n_runs": lambda: el2n_runs, "epoch_probs": lambda: epoch_probs, "gradnorm_deep": lambda: deep})
    dev_acc = float((probs_of(head, dev_feats).argmax(1) == dev.labels).mean())
    all_scores = {name: scores.compute(name, ctx) for name in ALL_SCORES}
    return ScoredPool(train, dev, probs, all_scores, dev_acc, scores.data_map(epoch_probs, train.labels))


def selections_for(pool: ScoredPool, strategy: str, k: int, seed: int) -> np.ndarray:
    how, score = strategy_parts(strategy)
    return selection.select(how, pool.scores[score] if score else None, pool.train.labels, k, seed)


def selection_figures(pool: ScoredPool, config: HardbenchConfig) -> dict:
    """Sanity figures: share misclassified by the scorer per selection, overlaps, Spearman between scores."""
    per_k = {}
    for k in config.ks:
        chosen = {s: selections_for(pool, s, k, config.seeds[0]) for s in config.strategies}
        per_k[k] = {
            "misclassified": {s: sanity.share_misclassified(i, pool.probs, pool.train.labels) for s, i in chosen.items()},
            "overlap": {f"{a} ∩ {b}": v for (a, b), v in sanity.overlap_matrix(chosen).items()},
        }
    spearman = {f"{a} ~ {b}": v for (a, b), v in sanity.spearman_matrix(pool.scores).items()}
    return {"per_k": per_k, "spearman": spearman}
