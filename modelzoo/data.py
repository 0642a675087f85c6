"""Labelled sets for training and evaluation: imported LabeledItems, verified Examples, or a JSONL file.

Names (used by `evaluate` and stored with evaluations):
  "<collection>/<split>"   LabeledItem rows ("*" for every collection), e.g. "demo/test", "*/train"
  "round-<n>[/<split>]"    verified Examples of round n (optionally one dataset split)
  "jsonl:[<preset>:]<path>"  a JSONL file in the task's field names, or mapped by an import preset
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.models import LabeledItem, Task, payload_hash


@dataclass
class LabelledSet:
    name: str
    inputs: list[dict[str, str]] = field(default_factory=list)
    targets: list[Any] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)  # content keys: the lineage fingerprint

    def add(self, model_input: dict[str, str], target: Any, key: str) -> None:
        self.inputs.append(model_input)
        self.targets.append(target)
        self.keys.append(key)

    def extend(self, other: LabelledSet) -> LabelledSet:
        for i, t, k in zip(other.inputs, other.targets, other.keys, strict=True):
            self.add(i, t, k)
        return self


def labeled_items(task: Task, collections: list[str] | None = None, split: str = "train") -> LabelledSet:
    kind, config = task.kind_impl, task.typed_config
    rows = LabeledItem.objects.filter(task=task, split=split).order_by("id")
    if collections:
        rows = rows.filter(collection__in=collections)
    out = LabelledSet(f"{','.join(collections) if collections else '*'}/{split}")
    for item in rows:
        out.add(kind.model_input(config, item.context or {}, item.input), item.target, item.key)
    return out


def verified_examples(task: Task, rounds: list[int] | None = None, split: str | None = None,
                      for_training: bool = False) -> LabelledSet:
    """Examples whose label the validators confirmed; the validated label wins over the writer's target.
    `for_training` leaves out examples already assigned to a dev or test split."""
    from annotation.models import Example

    kind, config = task.kind_impl, task.typed_config
    rows = Example.objects.filter(round__task=task, consensus=Example.Consensus.VERIFIED, retracted=False)
    if rounds:
        rows = rows.filter(round__number__in=rounds)
    if split:
        rows = rows.filter(split=split)
    if for_training:
        rows = rows.exclude(split__in=["dev", "test"])
    out = LabelledSet(f"round-{','.join(map(str, rounds)) if rounds else '*'}" + (f"/{split}" if split else ""))
    for ex in rows.select_related("context").order_by("id"):
        target = ex.validated_label if ex.validated_label is not None else ex.target
        context = ex.context.payload if ex.context_id else {}
        out.add(kind.model_input(config, context, ex.input), target, payload_hash("example", ex.pk, target))
    return out


def jsonl(task: Task, path: Path | str, preset: str | None = None) -> LabelledSet:
    """Rows validated by the task kind exactly as the importer does (bad rows are an error)."""
    from tasks.importing import ImportFailed, ImportReport, ImportSpec, parse_rows, read_jsonl

    spec = ImportSpec.from_preset(preset, target="eval") if preset else ImportSpec(target="eval")
    report = ImportReport()
    records = parse_rows(task, spec, read_jsonl(path), report)
    if report.errors:
        raise ImportFailed(report)
    kind, config = task.kind_impl, task.typed_config
    out = LabelledSet(f"jsonl:{preset + ':' if preset else ''}{path}")
    for r in records:
        out.add(kind.model_input(config, r["context"], r["input"]), r["target"], r["key"])
    return out


def load(task: Task, name: str) -> LabelledSet:
    if name.startswith("jsonl:"):
        rest = name.removeprefix("jsonl:")
        preset, _, path = rest.partition(":") if ":" in rest and not Path(rest).exists() else ("", "", rest)
        return jsonl(task, path, preset or None)
    source, _, split = name.partition("/")
    if source.startswith("round-"):
        return verified_examples(task, [int(source.removeprefix("round-"))], split or None)
    collections = None if source in ("", "*") else source.split(",")
    return labeled_items(task, collections, split or "train")


def training_set(task: Task, collections: list[str] | None = None, rounds: list[int] | None = None,
                 include_examples: bool = True, jsonl_path: Path | str | None = None,
                 preset: str | None = None) -> LabelledSet:
    """The default training data: LabeledItems (split=train) plus verified Examples, or a JSONL file."""
    if jsonl_path:
        return jsonl(task, jsonl_path, preset)
    out = labeled_items(task, collections, "train")
    if include_examples:
        out.extend(verified_examples(task, rounds, for_training=True))
    return out
