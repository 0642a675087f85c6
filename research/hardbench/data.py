"""Reading the shared SST-2 files (JSON lines: idx, sentence, label 0|1)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SST2_LABELS = ("negative", "positive")


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
