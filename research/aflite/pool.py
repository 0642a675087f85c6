"""The experiment's data: a seeded sample of SST-2 train as the pool; SST-2 dev and the positive/negative rows of
DynaSent R1 and R2 test (evaluation only: in-domain, and two out-of-domain sets); and their frozen embeddings (mean-pooled all-MiniLM-L6-v2 by default, `hardness.encoding.embed_texts`), cached on disk.

A cache file is named by what it holds (split, sample size, sample seed, encoder tag), so a rerun with the same
settings embeds nothing, and a different pool never reads another's vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hardness.encoding import embed_texts
from research.hardbench.data import TextSet, cached_array, load_binary, load_sst2


@dataclass(frozen=True)
class Embedded:
    rows: TextSet
    features: np.ndarray  # (n, d) float32, in the order of rows


def sample_pool(train: TextSet, size: int | None, seed: int) -> TextSet:
    """`size` rows of `train` drawn without replacement with `seed` (all of them, in order, when None or larger)."""
    if size is None or size >= len(train):
        return train
    if size <= 0:
        raise ValueError(f"pool size must be positive, got {size}")
    picked = np.sort(np.random.default_rng(seed).choice(len(train), size=size, replace=False))
    return train.subset(picked)


def cached_features(path: Path, rows: TextSet, encoder, tokenizer, progress: str | None = None) -> np.ndarray:
    """The embeddings of `rows`, read from `path` when it holds as many rows, else computed and saved there."""
    return cached_array(path, lambda: embed_texts(encoder, tokenizer, rows.texts, 128, progress), rows=len(rows))


# name in the report → (file under DATA_DIR, cache name); DynaSent keeps its positive and negative rows (0/1 as SST-2)
EVAL_SETS = {
    "SST-2 dev": ("sst2/dev.jsonl", "sst2-dev"),
    "DynaSent R1 test (pos/neg)": ("dynasent/r1_test.jsonl", "dynasent-r1-test-binary"),
    "DynaSent R2 test (pos/neg)": ("dynasent/r2_test.jsonl", "dynasent-r2-test-binary"),
}
def load_embedded(data_dir: Path, cache_dir: Path, pool_size: int | None, seed: int, encoder, tokenizer,
                  tag: str = "minilm") -> tuple[Embedded, dict[str, Embedded]]:
    """(pool, evaluation sets): the sampled SST-2 train pool and `EVAL_SETS`, each with its cached embeddings."""
    pool = sample_pool(load_sst2(data_dir, "train"), pool_size, seed)
    name = f"sst2-train-{len(pool)}-seed{seed}-{tag}.npy"
    pool_feats = cached_features(cache_dir / name, pool, encoder, tokenizer, "embed pool")
    evals = {}
    for label, (file, cache) in EVAL_SETS.items():
        rows = load_binary(Path(data_dir) / file)
        evals[label] = Embedded(rows, cached_features(cache_dir / f"{cache}-{tag}.npy", rows, encoder, tokenizer,
                                                      f"embed {label}"))
    return Embedded(pool, pool_feats), evals
