"""The experiment's data: a seeded sample of SST-2 train as the pool; SST-2 dev and the positive/negative rows of
DynaSent R1 and R2 test (evaluation only: in-domain, and two out-of-domain sets); and their frozen embeddings (mean-pooled all-MiniLM-L6-v2 by default, `hardness.encoding.embed_texts`), cached on disk.

A cache file is named by what it holds (split, sample size, sample seed, encoder tag), so a rerun with the same
settings embeds nothing, and a different pool never reads another's vectors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hardness.encoding import embed_texts
from research.hardbench.data import TextSet, load_sst2


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
    if path.exists():
        feats = np.load(path)
        if len(feats) == len(rows):
            return feats
    feats = embed_texts(encoder, tokenizer, rows.texts, 128, progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, feats)
    return feats


# name in the report → (file under DATA_DIR, cache name); DynaSent keeps its positive and negative rows (0/1 as SST-2)
EVAL_SETS = {
    "SST-2 dev": ("sst2/dev.jsonl", "sst2-dev"),
    "DynaSent R1 test (pos/neg)": ("dynasent/r1_test.jsonl", "dynasent-r1-test-binary"),
    "DynaSent R2 test (pos/neg)": ("dynasent/r2_test.jsonl", "dynasent-r2-test-binary"),
}
BINARY = {"negative": 0, "positive": 1}


def load_binary(path: Path) -> TextSet:
    """The rows of a JSON-lines file whose label is negative/positive (or 0/1), as SST-2 labels."""
    texts, labels, ids = [], [], []
    with open(path, encoding="utf-8") as fh:
        for position, line in enumerate(fh):
            row = json.loads(line)
            label = BINARY.get(row["label"], row["label"])
            if label in (0, 1):
                texts.append(row["sentence"])
                labels.append(int(label))
                ids.append(position)
    return TextSet(texts, np.asarray(labels, dtype=np.int64), np.asarray(ids, dtype=np.int64))


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
