"""Reading the shared sentiment files (SST-2: idx, sentence, label 0|1; DynaSent's positive and negative rows), and
the disk cache of computed arrays (features, scores) the research packages share."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SST2_LABELS = ("negative", "positive")
BINARY = {"negative": 0, "positive": 1}


@dataclass(frozen=True)
class TextSet:
    texts: list[str]
    labels: np.ndarray  # int64 class indices
    ids: np.ndarray  # the dataset's own row ids (idx)

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, indices: np.ndarray) -> TextSet:
        indices = np.asarray(indices, dtype=np.int64)
        return TextSet([self.texts[i] for i in indices], self.labels[indices], self.ids[indices])


def load_sst2(data_dir: Path | str, split: str, max_rows: int | None = None) -> TextSet:
    """The first `max_rows` rows of sst2/<split>.jsonl (all rows when None)."""
    texts, labels, ids = [], [], []
    with open(Path(data_dir) / "sst2" / f"{split}.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if max_rows is not None and len(texts) >= max_rows:
                break
            row = json.loads(line)
            texts.append(row["sentence"])
            labels.append(int(row["label"]))
            ids.append(int(row["idx"]))
    return TextSet(texts, np.asarray(labels, dtype=np.int64), np.asarray(ids, dtype=np.int64))


def load_binary(path: Path | str) -> TextSet:
    """The rows of a JSON-lines file whose label is negative/positive (or 0/1), as SST-2 labels; DynaSent's neutral
    and mixed rows are left out. Ids are the rows' positions in the file."""
    texts, labels, ids = [], [], []
    with open(path, encoding="utf-8") as fh:
        for position, line in enumerate(fh):
            row = json.loads(line)
            label = BINARY.get(row["label"], row["label"]) if isinstance(row["label"], str) else row["label"]
            if label in (0, 1):
                texts.append(row["sentence"])
                labels.append(int(label))
                ids.append(position)
    return TextSet(texts, np.asarray(labels, dtype=np.int64), np.asarray(ids, dtype=np.int64))


def cached_array(path: Path, compute: Callable[[], np.ndarray], rows: int | None = None) -> np.ndarray:
    """The array saved at `path` (when `rows` is given, only if it has that many rows), else `compute()`, saved there."""
    if path.exists():
        value = np.load(path)
        if rows is None or len(value) == rows:
            return value
    value = np.asarray(compute())
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, value)
    return value
