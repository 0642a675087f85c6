"""How an Example row becomes a record of the export schema (exports.schema), the same for every format.

Rows are read in chunks (`iterator(chunk_size=…)`, a server-side cursor on PostgreSQL) with their vote
counts as subqueries, so memory stays flat. JSON columns are read as text, decoded and projected onto the
task's schema (`ExportSchema.project`); values that repeat (a context, a label, the model versions) are decoded
once per distinct text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from django.db import connections, transaction
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, TextField, Value
from django.db.models.functions import Cast, Coalesce

# The columns and their kinds live in exports.schema (the one schema of every file); re-exported here.
from accounts import pseudonyms
from exports.schema import BOOL, COLUMNS, FLOAT, INT, JSON, STR, ExportSchema, export_schema  # noqa: F401
from tasks.kinds import TaskKind
from tasks.models import Task
from validation.models import Validation

# Plain columns, and JSON columns read as text (record column -> model field): a text that repeats (a context, a
# label, the model versions) is decoded once.
ROW_FIELDS = (
    "id",
    "round__number",
    "split",
    "context_id",
    "context__hardness_score",
    "consensus",
    "fooled",
    "author_id",
    "created_at",
    "flagged",
    "reliability__outcome",
    "reliability__confidence",
    "assistance",
    "suggested_text",
    "edit_distance",
    "suggestion__provider",
    "suggestion__model",
    "arm__key",
    "language",
)
JSON_SOURCES = {
    "context": "context__payload",
    "input": "input",
    "target": "target",
    "validated_label": "validated_label",
    "reliability_label": "reliability__label",
    "ensemble_prediction": "ensemble_prediction",
    "model_predictions": "model_predictions",
    "model_versions": "model_versions",
}
CHUNK_SIZE = 2000


def batched(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    """itertools.batched (Python 3.12) for 3.11."""
    while chunk := list(islice(items, size)):
        yield chunk


class RawJson(str):
    """JSON text straight from the database (kept for callers that pass such text around)."""


def decoded(value: Any) -> Any:
    return json.loads(value) if isinstance(value, RawJson) else value


# The database's JSON text has no surrounding white space: raw_decode skips json.loads' checks and its strip.
_decode = json.JSONDecoder().raw_decode


def _loads(text: str) -> Any:
    return _decode(text)[0]


# Where the `data_map_region` column comes from: functions task -> {example id: region}, registered by the layer
# that keeps the data maps (rounds registers `rounds.datamaps.regions_by_example` in its app config; exports sits
# below rounds and never imports it). None registered: the column is empty.
DataMapRegions = Callable[[Task], dict[int, str]]
DATA_MAP_SOURCES: list[DataMapRegions] = []


def register_data_map_source(source: DataMapRegions) -> None:
    if source not in DATA_MAP_SOURCES:
        DATA_MAP_SOURCES.append(source)


def data_map_regions(task: Task) -> dict[int, str]:
    out: dict[int, str] = {}
    for source in DATA_MAP_SOURCES:
        out.update(source(task))
    return out


# JSON columns whose values repeat across rows: decoded and projected once per distinct text (bounded caches).
REPEATING = ("context", "target", "validated_label", "reliability_label", "model_versions")
CACHE_MAX = 10_000


def columns() -> list[tuple[str, str]]:
    return list(COLUMNS.items())


def column_names() -> list[str]:
    return list(COLUMNS)


def annotator_id(task: Task, user_id: int) -> str:
    """A salted HMAC of the user id: stable within a task, unlinkable across tasks, never reversible
    (accounts.pseudonyms, the rule every download shares)."""
    return pseudonyms.person_id(task.pk, user_id)


@dataclass
class RecordBuilder:
    task: Task
    kind: TaskKind = field(init=False)
    schema: ExportSchema = field(init=False)
    _ids: dict[int, str] = field(default_factory=dict, init=False)
    _labels: dict[str | None, str] = field(default_factory=dict, init=False)
    _repeats: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)
    _regions: dict[int, str] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.kind = self.task.kind_impl
        self.schema = export_schema(self.task)
        self._repeats = {column: {} for column in REPEATING}

    def region(self, example_id: int) -> str | None:
        """The example's data-map region (read once per builder, on the first record)."""
        if self._regions is None:
            self._regions = data_map_regions(self.task)
        return self._regions.get(example_id)

    def annotator(self, user_id: int) -> str:
        if user_id not in self._ids:
            if len(self._ids) > 100_000:  # bound the cache on huge rounds with many writers
                self._ids.clear()
            self._ids[user_id] = annotator_id(self.task, user_id)
        return self._ids[user_id]

    def label(self, target: str | None, validated: str | None) -> str:
        """The label a model should learn: the validated label, else the writer's target (cached by its text)."""
        text = validated if validated not in (None, "null") else target
        if text not in self._labels:
            if len(self._labels) > CACHE_MAX:  # free-text answers (QA): keep the cache bounded
                self._labels.clear()
            self._labels[text] = self.kind.target_label(None if text is None else json.loads(text))
        return self._labels[text]

    def value(self, column: str, text: str | None) -> Any:
        """A JSON column's text, decoded and projected onto the schema (null stays null)."""
        if text is None or text == "null":
            return None
        cache = self._repeats.get(column)
        if cache is None:
            return self.schema.project(column, _loads(text))
        if text not in cache:
            if len(cache) > CACHE_MAX:
                cache.clear()
            cache[text] = self.schema.project(column, _loads(text))
        return cache[text]

    def record(self, row: dict[str, Any], exclusion: str | None) -> dict[str, Any]:
        text = {column: row[f"j_{column}"] for column in JSON_SOURCES}
        value = self.value
        return {
            "example_id": row["id"],
            "task": self.task.slug,
            "round": row["round__number"],
            "split": row["split"],
            "context_id": row["context_id"],
            "context": value("context", text["context"]),
            "input": value("input", text["input"]),
            "target": value("target", text["target"]),
            "validated_label": value("validated_label", text["validated_label"]),
            "label": self.label(text["target"], text["validated_label"]),
            "reliability_outcome": row["reliability__outcome"],
            "reliability_label": value("reliability_label", text["reliability_label"]),
            "reliability": row["reliability__confidence"],
            "consensus": row["consensus"],
            "votes_correct": row["v_correct"],
            "votes_incorrect": row["v_incorrect"],
            "votes_flagged": row["v_flagged"],
            "fooled": row["fooled"],
            "ensemble_prediction": value("ensemble_prediction", text["ensemble_prediction"]),
            "model_predictions": value("model_predictions", text["model_predictions"]),
            "model_versions": value("model_versions", text["model_versions"]),
            "hardness_score": row["context__hardness_score"],
            "data_map_region": self.region(row["id"]),
            "annotator_id": self.annotator(row["author_id"]),
            "created_at": row["created_at"].isoformat(),
            "exclusion": exclusion,
            "assistance": row["assistance"] or None,
            "suggested_text": row["suggested_text"] or None,
            "edit_distance": row["edit_distance"],
            "assistant_model": (f"{row['suggestion__provider']}: {row['suggestion__model']}"
                                if row["assistance"] and row["suggestion__provider"] else None),
            "arm": row["arm__key"],
            "language": row["language"] or None,
        }


def vote_count(verdict: str) -> Coalesce:
    """Votes with `verdict` on the row's example (an indexed subquery per row: cheaper than a join + GROUP BY)."""
    votes = (
        Validation.objects.filter(example_id=OuterRef("pk"), verdict=verdict, counted=True)
        .order_by()
        .values("example_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    return Coalesce(Subquery(votes, output_field=IntegerField()), Value(0))


def exclusion_of(row: dict[str, Any]) -> str | None:
    if row["consensus"] in ("rejected", "flagged"):
        return row["consensus"]
    return "flagged_by_writer" if row["flagged"] else None


@contextmanager
def streaming_read(using: str) -> Iterator[None]:
    """On PostgreSQL, read inside a transaction: outside one, Django declares the server-side cursor
    WITH HOLD, and PostgreSQL then materialises the whole result before the first row arrives.
    Not on SQLite, where a long read transaction would block writers for the whole download."""
    if connections[using].vendor == "postgresql":
        with transaction.atomic(using=using):
            with connections[using].cursor() as cursor:
                # JIT compiling this plan costs seconds per file and saves nothing on a streamed scan.
                cursor.execute("SET LOCAL jit = off")
            yield
    else:
        yield


def record_batches(
    task: Task, examples: QuerySet, chunk_size: int = CHUNK_SIZE, mark_exclusion: bool = False,
    builder: RecordBuilder | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """Records of `examples` (ordered by id), `chunk_size` at a time, streamed from the database. `builder`: one
    to share across files (a bundle), so its schema counts the keys left out over all of them."""
    builder = builder or RecordBuilder(task)
    as_text = {f"j_{column}": Cast(source, TextField()) for column, source in JSON_SOURCES.items()}
    votes = {f"v_{verdict}": vote_count(verdict) for verdict in Validation.Verdict.values}
    rows = examples.order_by("id").values(*ROW_FIELDS, **as_text, **votes)
    with streaming_read(examples.db):
        for chunk in batched(rows.iterator(chunk_size=chunk_size), chunk_size):
            yield [builder.record(row, exclusion_of(row) if mark_exclusion else None) for row in chunk]
