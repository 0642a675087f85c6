"""The two sources of labelled sets (`zoo.data.LabelledSet`) the model zoo reads itself.

The model zoo trains and evaluates on ready `LabelledSet`s; it never decides which collected examples
form a set. Sets of collected examples (a round's train or test split) are built by the round pipeline
from what `exports.splits` decides (`rounds.datasets`). What the model zoo reads on its own is labelled data
that was not written on the platform:

  "<collection>/<split>"     imported LabeledItem rows ("*" for every collection), e.g. "demo/test", "*/train",
                             "*/heldout" (the stable slice of imported train rows the importer held out:
                             evaluated on, never trained on — a training set reads split "train" only)
  "jsonl:[<preset>:]<path>"  a JSONL file in the task's field names, or mapped by an import preset
"""

from __future__ import annotations

from pathlib import Path

from dynabench_site.errors import InvalidInput
from tasks.importing import ImportFailed, ImportReport, ImportSpec, parse_rows, read_jsonl
from tasks.models import LabeledItem, Task
from zoo.data import LabelledSet

__all__ = ["LabelledSet", "UnknownDataset", "from_lines", "jsonl", "labeled_items", "load", "training_set"]


class UnknownDataset(InvalidInput, ValueError):
    def __init__(self, message: str):
        super().__init__(message, field="dataset")


def labeled_items(task: Task, collections: list[str] | None = None, split: str = "train") -> LabelledSet:
    kind, config = task.kind_impl, task.typed_config
    rows = LabeledItem.objects.filter(task=task, split=split).order_by("id")
    if collections:
        rows = rows.filter(collection__in=collections)
    out = LabelledSet(f"{','.join(collections) if collections else '*'}/{split}")
    for item in rows:
        out.add(kind.model_input(config, item.context or {}, item.input), item.target, item.key)
    return out


def jsonl(task: Task, path: Path | str, preset: str | None = None) -> LabelledSet:
    """Rows validated by the task kind exactly as the importer does (bad rows are an error)."""
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


def from_lines(task: Task, name: str, lines, preset: str | None = None, skip_errors: bool = False) -> LabelledSet:
    """Numbered JSON lines ((line number, text) pairs), validated by the task kind as the importer does; with
    `skip_errors` the rows the kind refuses are left out (else any bad row is an error)."""
    spec = ImportSpec.from_preset(preset, target="eval") if preset else ImportSpec(target="eval")
    report = ImportReport()
    records = parse_rows(task, spec, lines, report)
    if report.errors and not skip_errors:
        raise ImportFailed(report)
    kind, config = task.kind_impl, task.typed_config
    out = LabelledSet(name)
    for r in records:
        out.add(kind.model_input(config, r["context"], r["input"]), r["target"], r["key"])
    return out


def load(task: Task, name: str) -> LabelledSet:
    """An imported set by name (see the module docstring)."""
    if name.startswith("jsonl:"):
        rest = name.removeprefix("jsonl:")
        preset, _, path = rest.partition(":") if ":" in rest and not Path(rest).exists() else ("", "", rest)
        return jsonl(task, path, preset or None)
    source, _, split = name.partition("/")
    if source.startswith("round-"):
        raise UnknownDataset(f"{name!r}: a round's splits come from its dataset export (rounds.datasets), "
                             "not from the model zoo")
    collections = None if source in ("", "*") else source.split(",")
    return labeled_items(task, collections, split or "train")


def training_set(task: Task, collections: list[str] | None = None, jsonl_path: Path | str | None = None,
                 preset: str | None = None) -> LabelledSet:
    """Imported training data: LabeledItems (split=train only: never the held-out slice, split "heldout"), or a
    JSONL file. The round pipeline adds each round's train split to this (`rounds.datasets.training_set`)."""
    if jsonl_path:
        return jsonl(task, jsonl_path, preset)
    return labeled_items(task, collections, "train")
