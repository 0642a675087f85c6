"""The demo tasks' training sets and standard held-out sets (`demo_models`, `evaluate_demo`).

Training data (never a split that is evaluated on): the task's imported train items, i.e. what a round's
retraining learns from too (`rounds.datasets`, which adds each round's train split):
- every demo task: its own items (`tasks/demo/*.json`, collection "demo"), repeated `DEMO_REPEAT` times so
  that a few dozen hand-written rows still count next to thousands of sample rows;
- every other imported train collection once (`load_demo`):
  - qa: the vendored SQuAD v1.1 TRAIN articles (collection "squad-train", `tasks/demo/samples/`);
  - hate-speech: the vendored Davidson training slice (collection "davidson-train");
  - with `load_demo --base-data` and DATA_DIR: sentiment a stable 4,000-sentence sample of SST-2 train
    (collection "sst2-train-sample"), nli SNLI dev (collection "snli-dev"; SNLI test is the held-out set).
  The importer keeps a stable 5 % of a large import (at most 500 rows) in split "heldout": never trained on.

Held-out sets (evaluation only), read from DATA_DIR:
- qa: the 3 SQuAD v1.1 DEV articles of squad_subset (Genghis_Khan, Huguenot, Immune_system; 700 questions);
- sentiment: SST-2 dev (872; binary: the ensemble's positive vs negative probability);
- nli: SNLI test (a stable sample of `limit` pairs);
- hate-speech: the Davidson held-out slice (ids hashing into the first 20 %, a stable sample of `limit`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from modelzoo import data
from tasks.models import Task

DEMO_REPEAT = 5
SQUAD_HELD_OUT = ("Genghis_Khan", "Huguenot", "Immune_system")
DAVIDSON_HELD_OUT = 0.2  # the same rule as tasks/demo/samples/make_samples.py


def fraction(key: str) -> float:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) / 16 ** 12


def davidson_held_out(row_id) -> bool:
    return fraction(f"davidson:{row_id}") < DAVIDSON_HELD_OUT


def data_dir() -> Path:
    return Path(settings.DATA_DIR)


def _numbered(rows) -> Iterator[tuple[int, str]]:
    return ((n, json.dumps(r, ensure_ascii=False)) for n, r in enumerate(rows, start=1))


def _jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _stable_sample(rows: list[dict], key: str, limit: int | None) -> list[dict]:
    if limit is None or len(rows) <= limit:
        return rows
    return sorted(rows, key=lambda r: fraction(f"{key}:{r.get('id', r.get('idx'))}"))[:limit]


# -- training ---------------------------------------------------------------------------------------


def training_set(task: Task, max_examples: int | None = None) -> data.LabelledSet:
    """The demo task's round-1 training data (see the module docstring): its demo items `DEMO_REPEAT` times and
    every other imported train collection once (each at most `max_examples` rows, a stable sample)."""
    demo = data.labeled_items(task, ["demo"], "train")
    out = data.LabelledSet(f"demo/train x{DEMO_REPEAT}")
    for _ in range(DEMO_REPEAT):
        out.extend(demo)
    others = set(task.labeled_items.filter(split="train").order_by().values_list("collection", flat=True).distinct())
    for collection in sorted(others - {"demo"}):
        extra = data.labeled_items(task, [collection], "train")
        out.extend(_capped(extra, max_examples))
        out.name += f" + {collection}/train ({len(extra.inputs)})"
    return out


def opponent_rows(task: Task, limit: int) -> data.LabelledSet:
    """Training rows to fit a language model opponent's offsets on: a stable sample of every train collection,
    as even across labels as the rows allow (the demo's own items bring the labels the base data lacks)."""
    rows = data.labeled_items(task, None, "train")
    by_label: dict[str, list[int]] = {}
    for i, target in enumerate(rows.targets):
        by_label.setdefault(task.kind_impl.target_label(target), []).append(i)
    for indices in by_label.values():
        indices.sort(key=lambda i: fraction(rows.keys[i]))
    chosen: list[int] = []
    while len(chosen) < limit and any(by_label.values()):
        for indices in by_label.values():  # one per label in turn, until the limit or the rows run out
            if indices and len(chosen) < limit:
                chosen.append(indices.pop(0))
    out = data.LabelledSet(f"*/train (a sample of {len(chosen)}, even across labels)")
    for i in sorted(chosen):
        out.add(rows.inputs[i], rows.targets[i], rows.keys[i])
    return out


def _capped(labelled: data.LabelledSet, limit: int | None) -> data.LabelledSet:
    if limit is None or len(labelled.inputs) <= limit:
        return labelled
    ranked = sorted(range(len(labelled.keys)), key=lambda i: fraction(labelled.keys[i]))[:limit]
    out = data.LabelledSet(labelled.name)
    for i in sorted(ranked):
        out.add(labelled.inputs[i], labelled.targets[i], labelled.keys[i])
    return out


# -- held-out sets ----------------------------------------------------------------------------------


@dataclass
class HeldOut:
    name: str
    labelled: data.LabelledSet
    binary: tuple[str, str] | None = None  # score the ensemble on these two labels only (SST-2 on 3 labels)


def held_out_sets(task: Task, limit: int | None = 1000) -> list[HeldOut]:
    """The task's standard held-out sets that exist under DATA_DIR (an empty list when none is there)."""
    root = data_dir()
    if task.kind == "qa" and (root / "squad_subset" / "squad_subset.jsonl").is_file():
        rows = [r for r in _jsonl(root / "squad_subset" / "squad_subset.jsonl") if r["title"] in SQUAD_HELD_OUT]
        return [HeldOut("squad-dev-3-articles", data.from_lines(task, "squad v1.1 dev: 3 articles", _numbered(rows),
                                                                "squad", skip_errors=True))]
    if task.kind == "sentiment" and (root / "sst2" / "dev.jsonl").is_file():
        rows = list(_jsonl(root / "sst2" / "dev.jsonl"))
        return [HeldOut("sst2-dev", data.from_lines(task, "sst2/dev", _numbered(rows), "sst2"),
                        binary=("negative", "positive"))]
    if task.kind == "nli" and (root / "snli" / "test.jsonl").is_file():
        rows = _stable_sample(list(_jsonl(root / "snli" / "test.jsonl")), "snli-test", limit)
        return [HeldOut("snli-test", data.from_lines(task, f"snli/test ({len(rows)})", _numbered(rows), "snli"))]
    if task.kind == "hate_speech" and (root / "davidson_hate" / "labeled_data.jsonl").is_file():
        rows = [r for r in _jsonl(root / "davidson_hate" / "labeled_data.jsonl") if davidson_held_out(r["id"])]
        rows = _stable_sample(rows, "davidson-eval", limit)
        return [HeldOut("davidson-held-out", data.from_lines(task, f"davidson held-out ({len(rows)})",
                                                             _numbered(rows), "davidson"))]
    return []


def score(task: Task, held: HeldOut, predictions: list[dict]) -> dict[str, float]:
    """The kind's metrics; for a binary set scored by a model with more labels, the better of the two labels'
    probabilities decides (and the plain argmax accuracy is kept as `accuracy_all_labels`)."""
    kind, config = task.kind_impl, task.typed_config
    metrics = kind.evaluate(config, held.labelled.targets, predictions)
    if held.binary:
        a, b = held.binary
        narrowed = [{**p, "label": a if p["probs"].get(a, 0) >= p["probs"].get(b, 0) else b} for p in predictions]
        binary = kind.evaluate(config, held.labelled.targets, narrowed)
        metrics = {"accuracy": binary["accuracy"], "macro_f1": binary["macro_f1"],
                   "accuracy_all_labels": metrics["accuracy"]}
    return metrics
