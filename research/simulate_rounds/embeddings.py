"""The many-round experiment's data: a candidate pool from SST-2 train and the held-out sets, as frozen
all-MiniLM-L6-v2 features computed once and cached on disk.

Candidates come from SST-2 **train** only. The issue suggested DynaSent R1 dev as candidates, but dev and test
splits are evaluation-only here (never trained on), and DynaSent's train splits are not in the shared data (over
4 MiB, absent from every snapshot: /work/shared/data/README.md). Held out: DynaSent R1 test, DynaSent R2 test
(their positive and negative sentences: the candidates are binary) and SST-2 dev.

The pool is a fixed permutation (seed 0) of SST-2 train embedded in chunks of `CHUNK` rows, so a larger pool
reuses the chunks a smaller one computed. Features are the product's frozen pass (`hardness.encoding.embed_texts`:
length-sorted batches, mean pooling).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from research.hardbench.data import cached_array, load_binary, load_sst2

CHUNK = 5000
PERMUTATION_SEED = 0
HELDOUT = {  # name -> (file under DATA_DIR, reader)
    "DynaSent R1 test": "dynasent/r1_test.jsonl",
    "DynaSent R2 test": "dynasent/r2_test.jsonl",
    "SST-2 dev": "sst2/dev.jsonl",
}
IN_DOMAIN = "SST-2 dev"  # the candidates' own source; the DynaSent sets are out of domain (Yelp, Dynabench)


@dataclass
class Features:
    texts: list[str]
    labels: np.ndarray  # int64: 0 negative, 1 positive
    x: np.ndarray  # float32 (n, d)

    def __len__(self) -> int:
        return len(self.texts)


def pool_order(data_dir: Path) -> tuple[list[str], np.ndarray]:
    train = load_sst2(data_dir, "train")
    order = np.random.default_rng(PERMUTATION_SEED).permutation(len(train))
    return [train.texts[i] for i in order], train.labels[order]


class Embedder:
    """The frozen encoder, loaded on first use (a cached run never loads it)."""

    def __init__(self, encoder_name: str | None = None, batch_size: int = 128) -> None:
        self.encoder_name, self.batch_size, self._model = encoder_name, batch_size, None
        self.seconds = 0.0

    def __call__(self, texts: list[str]) -> np.ndarray:
        from hardness.encoding import embed_texts

        if self._model is None:
            from research.hardbench.__main__ import load
            from zoo import encoders

            self._model = load(encoders.resolve(self.encoder_name))
        start = time.perf_counter()
        out = embed_texts(*self._model, texts, self.batch_size)
        self.seconds += time.perf_counter() - start
        return out


def load_pool(data_dir: Path, cache_dir: Path, size: int, embed: Callable[[list[str]], np.ndarray],
              log: Callable[[str], None] = print) -> Features:
    """The first `size` rows of the permuted SST-2 train, with features (cached per chunk)."""
    texts, labels = pool_order(data_dir)
    size = min(size, len(texts))
    parts = []
    for start in range(0, size, CHUNK):
        end = min(start + CHUNK, len(texts))
        path = cache_dir / f"sst2-train-perm{PERMUTATION_SEED}-{start}-{end}.npy"
        if not path.exists():
            log(f"embedding pool rows {start}–{end}")
        parts.append(cached_array(path, lambda s=start, e=end: np.asarray(embed(texts[s:e]), dtype=np.float32)))
    x = np.concatenate(parts)[:size]
    return Features(texts[:size], labels[:size], x)


def load_heldout(data_dir: Path, cache_dir: Path, embed: Callable[[list[str]], np.ndarray],
                 log: Callable[[str], None] = print) -> dict[str, Features]:
    out = {}
    for name, rel in HELDOUT.items():
        rows = load_binary(data_dir / rel)
        texts, labels = rows.texts, rows.labels
        path = cache_dir / (rel.replace("/", "-").replace(".jsonl", "") + "-binary.npy")
        if not path.exists():
            log(f"embedding {name} ({len(texts)} sentences)")
        out[name] = Features(texts, labels, cached_array(path, lambda t=texts: np.asarray(embed(t), dtype=np.float32)))
    return out
