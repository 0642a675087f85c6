"""Import JSONL into a task: contexts, a labelled seed pool, or labelled evaluation data.

Every row is validated first (with the task kind's own rules); a file with errors imports nothing
unless the caller asks to skip bad rows. Rows are keyed by content, so re-importing never duplicates.

Labelled rows imported as train items lose a stable held-out slice (`hold_out`): rows whose key hashes below
HOLD_OUT_FRACTION go to split "heldout" instead of "train", at most HOLD_OUT_MAX per collection, and none for an
import of fewer than HOLD_OUT_MIN_ROWS rows (a small hand-written set keeps every row). Held-out rows are never
trained on nor offered as seeds (both read split "train"); the round pipeline evaluates every model on them
("base held-out", `rounds.datasets.BASE_HELD_OUT`), so a retraining that forgets the base data stops for approval.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from django.db import transaction

from dynabench_site.errors import InvalidInput
from dynabench_site.parsers import loads_bounded
from dynabench_site.text import text_problem
from tasks.kinds import InputError
from tasks.models import Context, LabeledItem, Task, payload_hash

Target = Literal["contexts", "pool", "eval"]
ROW_MAX_DEPTH = 20  # a row is a flat object (SQuAD's answers: two levels); deeper is refused, never a RecursionError

# The held-out slice of imported train rows (module docstring): the share, the cap per collection, and the least
# number of valid rows an import needs before anything is held out.
HOLD_OUT_FRACTION = 0.05
HOLD_OUT_MAX = 500
HOLD_OUT_MIN_ROWS = 200

# Field mappings for the shared datasets: project field <- source field, and label renames.
PRESETS: dict[str, dict[str, Any]] = {
    "sst2": {"map": {"text": "sentence", "label": "label"}, "labels": {"0": "negative", "1": "positive"}, "id": "idx"},
    "dynasent": {"map": {"text": "sentence", "label": "label"}, "labels": {}, "id": "text_id"},
    "anli": {"map": {"premise": "premise", "hypothesis": "hypothesis", "label": "label"}, "labels": {}, "id": "uid"},
    "snli": {"map": {"premise": "premise", "hypothesis": "hypothesis", "label": "label"}, "labels": {}, "id": "idx"},
    "davidson": {
        "map": {"text": "text", "label": "label"},
        "labels": {"0": "hateful", "1": "not hateful", "2": "not hateful"},
        "id": "id",
    },
    "squad": {"map": {"passage": "context", "question": "question", "answers": "answers"}, "labels": {}, "id": "id"},
}


@dataclass
class RowError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ImportReport:
    rows: int = 0
    created: int = 0
    existing: int = 0
    duplicates: int = 0
    skipped: int = 0
    held_out: int = 0  # of `created`: stored with split "heldout" instead of "train"
    errors: list[RowError] = field(default_factory=list)

    def summary(self) -> str:
        held = (f"; {self.held_out} of the imported rows held out from training (split heldout: never trained "
                f"on, the retraining gate's base held-out set)" if self.held_out else "")
        return (
            f"{self.rows} rows: {self.created} imported, {self.existing} already present, "
            f"{self.duplicates} duplicates within the file, {self.skipped} bad rows skipped{held}"
        )


class ImportFailed(InvalidInput):
    """Bad rows and `skip_errors` off: nothing was imported (HTTP 400); `report` lists every bad row."""

    def __init__(self, report: ImportReport):
        self.report = report
        shown = "\n".join(str(e) for e in report.errors[:20])
        more = f"\n… and {len(report.errors) - 20} more" if len(report.errors) > 20 else ""
        super().__init__(f"{len(report.errors)} bad row(s); nothing was imported:\n{shown}{more}")


@dataclass
class ImportSpec:
    target: Target
    mapping: dict[str, str] = field(default_factory=dict)  # project field -> source field
    labels: dict[str, str] = field(default_factory=dict)  # source label (as str) -> task label
    id_field: str | None = None
    collection: str = "imported"
    split: str = LabeledItem.Split.TRAIN
    source: str = "import"
    skip_errors: bool = False
    limit: int | None = None
    hold_out: bool = True  # train items lose the stable held-out slice (module docstring); False keeps every row

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> ImportSpec:
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
        preset = PRESETS[name]
        spec = cls(mapping=dict(preset["map"]), labels=dict(preset["labels"]), id_field=preset["id"], **overrides)
        return spec


def read_jsonl(path: Path | str) -> Iterator[tuple[int, str]]:
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield number, line


class _RowParser:
    def __init__(self, task: Task, spec: ImportSpec):
        self.task, self.spec = task, spec
        self.kind, self.config = task.kind_impl, task.typed_config

    def source(self, row: dict[str, Any], name: str) -> Any:
        column = self.spec.mapping.get(name, name)
        if column not in row:
            raise InputError(name, f"missing (expected source field {column!r})")
        return row[column]

    def context(self, row: dict[str, Any]) -> dict[str, str]:
        # Contexts carry every shown field; labelled rows need only the fields the model reads.
        if self.spec.target == "contexts":
            names = self.config.context_fields
        else:
            names = self.kind.model_context_fields(self.config)
        payload = {}
        for name in names:
            value = self.source(row, name)
            if not isinstance(value, str) or not value.strip():
                raise InputError(name, "must be a non-empty string")
            if (problem := text_problem(value)) is not None:  # the site's text rule (dynabench_site.text)
                raise InputError(name, problem)
            payload[name] = value  # kept verbatim: QA answer offsets point into it
        return payload

    def label(self, row: dict[str, Any]) -> Any:
        if self.kind.answer_is_span:
            return self._span_target(row)
        raw = self.source(row, "label")
        if raw is None:
            raise InputError("label", "is null (no gold label)")
        return self.spec.labels.get(str(raw), raw)

    def _span_target(self, row: dict[str, Any]) -> dict[str, Any]:
        if "answers" in self.spec.mapping or "answers" in row:
            return _squad_answers(self.source(row, "answers"))
        return {"text": self.source(row, "answer"), "start": self.source(row, "answer_start")}

    def parse(self, row: Any) -> dict[str, Any]:
        if not isinstance(row, dict):
            raise InputError("row", "must be a JSON object")
        context = self.context(row)
        if self.spec.target == "contexts":
            return {"payload": context, "key": payload_hash(context)}
        inputs = self.kind.clean_input(self.config, context, {f: self.source(row, f) for f in self.config.input_fields})
        target = self.kind.clean_target(self.config, context, self.label(row))
        external = str(row.get(self.spec.id_field, "")) if self.spec.id_field else ""
        return {"context": context, "input": inputs, "target": target, "external_id": external,
                "key": payload_hash(context, inputs, target)}


def _squad_answers(answers: Any) -> dict[str, Any]:
    """SQuAD's `answers` ({"text": [...], "answer_start": [...]}) as a target: the first answer and its offset,
    the other texts as alternatives. Each part missing or of the wrong shape is a row error naming it."""
    if not isinstance(answers, dict):
        raise InputError("answers", 'must be {"text": [...], "answer_start": [...]} with at least one answer')
    texts, starts = answers.get("text"), answers.get("answer_start")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise InputError("answers.text", "must be a non-empty list of answer texts")
    if "answer_start" not in answers:
        raise InputError("answers.answer_start", "missing: give each answer's character offset into the passage")
    if not isinstance(starts, list) or len(starts) < 1:
        raise InputError("answers.answer_start", "must be a list of character offsets, one per answer text")
    target: dict[str, Any] = {"text": texts[0], "start": starts[0]}
    if len(texts) > 1:
        target["alternatives"] = list(dict.fromkeys(texts[1:]))
    return target


def decode_row(line: str) -> Any:
    """One JSONL line, decoded; ValueError with the row's message (never a RecursionError) for bad JSON, a
    row nested deeper than ROW_MAX_DEPTH, NaN or Infinity."""
    try:
        return loads_bounded(line, ROW_MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    except ValueError as exc:
        raise ValueError(f"not accepted JSON ({exc})") from None


def parse_rows(task: Task, spec: ImportSpec, lines: Iterable[tuple[int, str]], report: ImportReport) -> list[dict]:
    parser, parsed, seen = _RowParser(task, spec), [], set()
    for number, line in lines:
        if spec.limit is not None and report.rows >= spec.limit:
            break
        report.rows += 1
        try:
            row = decode_row(line)
        except ValueError as exc:
            report.errors.append(RowError(number, str(exc)))
            continue
        try:
            record = parser.parse(row)
        except InputError as exc:
            report.errors.append(RowError(number, f"{exc.field}: {exc.message}"))
            continue
        if record["key"] in seen:
            report.duplicates += 1
            continue
        seen.add(record["key"])
        parsed.append(record)
    return parsed


def import_jsonl(task: Task, path: Path | str, spec: ImportSpec) -> ImportReport:
    return import_lines(task, read_jsonl(path), spec)


def import_lines(task: Task, lines: Iterable[tuple[int, str]], spec: ImportSpec) -> ImportReport:
    report = ImportReport()
    records = parse_rows(task, spec, lines, report)
    if report.errors and not spec.skip_errors:
        raise ImportFailed(report)
    report.skipped = len(report.errors)
    with transaction.atomic():
        if spec.target == "contexts":
            _save_contexts(task, spec, records, report)
        else:
            _save_items(task, spec, records, report)
    return report


def _save_contexts(task: Task, spec: ImportSpec, records: list[dict], report: ImportReport) -> None:
    existing = set(Context.objects.filter(task=task).values_list("key", flat=True))
    new = [Context(task=task, payload=r["payload"], key=r["key"], source=spec.source) for r in records if r["key"] not in existing]
    Context.objects.bulk_create(new, batch_size=1000, ignore_conflicts=True)
    report.created, report.existing = len(new), len(records) - len(new)


def _save_items(task: Task, spec: ImportSpec, records: list[dict], report: ImportReport) -> None:
    existing = set(LabeledItem.objects.filter(task=task, collection=spec.collection).values_list("key", flat=True))
    fresh = [r for r in records if r["key"] not in existing]
    held = held_out_keys(task, spec, records, fresh)
    new = [
        LabeledItem(task=task, collection=spec.collection, split=LabeledItem.Split.HELD_OUT if r["key"] in held
                    else spec.split, context=r["context"], input=r["input"], target=r["target"],
                    external_id=r["external_id"], key=r["key"])
        for r in fresh
    ]
    LabeledItem.objects.bulk_create(new, batch_size=1000, ignore_conflicts=True)
    report.created, report.existing, report.held_out = len(new), len(records) - len(new), len(held)


def hold_out_fraction(key: str) -> float:
    """A number in [0, 1) fixed by a row's key (its own hash, independent of the dev and split hashes)."""
    return int(hashlib.sha256(f"heldout:{key}".encode()).hexdigest()[:12], 16) / 16 ** 12


def held_out_keys(task: Task, spec: ImportSpec, records: list[dict], fresh: list[dict]) -> set[str]:
    """The keys of the new rows that go to split "heldout": train items of an import of at least
    HOLD_OUT_MIN_ROWS valid rows whose key hashes below HOLD_OUT_FRACTION, the lowest hashes first, while the
    collection holds fewer than HOLD_OUT_MAX held-out rows. Decided by content alone, so the same file gives the
    same slice in every database."""
    if not spec.hold_out or spec.split != LabeledItem.Split.TRAIN or len(records) < HOLD_OUT_MIN_ROWS:
        return set()
    room = HOLD_OUT_MAX - LabeledItem.objects.filter(task=task, collection=spec.collection,
                                                     split=LabeledItem.Split.HELD_OUT).count()
    ranked = sorted((f, r["key"]) for r in fresh if (f := hold_out_fraction(r["key"])) < HOLD_OUT_FRACTION)
    return {key for _, key in ranked[:max(room, 0)]}
