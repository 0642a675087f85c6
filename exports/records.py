"""The record schema of every export file, and how an Example row becomes a record.

Rows are read in chunks (`iterator(chunk_size=…)`, a server-side cursor on PostgreSQL) with their vote
counts as subqueries, and JSON columns as text, so memory stays flat and no JSON is decoded.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, TextField, Value
from django.db.models.functions import Cast, Coalesce

from tasks.kinds import TaskKind
from tasks.models import Task
from validation.models import Validation

INT, FLOAT, BOOL, STR, JSON = "int", "float", "bool", "str", "json"

# Column name -> kind. JSON columns hold objects in JSONL and JSON text in CSV and Parquet
# (a plain string stays a plain string, so a classification label reads as itself).
COLUMNS: dict[str, str] = {
    "example_id": INT,
    "task": STR,
    "round": INT,
    "split": STR,
    "context_id": INT,
    "context": JSON,
    "input": JSON,
    "target": JSON,
    "validated_label": JSON,
    "label": STR,
    "reliability_outcome": STR,
    "reliability_label": JSON,
    "reliability": FLOAT,
    "consensus": STR,
    "votes_correct": INT,
    "votes_incorrect": INT,
    "votes_flagged": INT,
    "fooled": BOOL,
    "ensemble_prediction": JSON,
    "model_predictions": JSON,
    "model_versions": JSON,
    "hardness_score": FLOAT,
    "annotator_id": STR,
    "created_at": STR,
    "exclusion": STR,
    # Provenance of the writing assistant (annotation.assistant): null without it; else as_suggested, edited or
    # own (written from scratch with suggestions shown), the suggestion it came from, the edit distance from it,
    # and the provider and model that wrote it.
    "assistance": STR,
    "suggested_text": STR,
    "edit_distance": INT,
    "assistant_model": STR,
}

# Plain columns, and JSON columns read as text (record column -> model field): the text goes into the
# files as it is, so no row's JSON is decoded and encoded again (most of the cost of an export).
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
    """JSON text straight from the database; writers put it out without decoding it."""


def raw_json(text: str | None) -> RawJson | None:
    return None if text is None or text == "null" else RawJson(text)


def decoded(value: Any) -> Any:
    return json.loads(value) if isinstance(value, RawJson) else value


def columns() -> list[tuple[str, str]]:
    return list(COLUMNS.items())


def column_names() -> list[str]:
    return list(COLUMNS)


def annotator_id(task: Task, user_id: int) -> str:
    """A salted HMAC of the user id: stable within a task, unlinkable across tasks, never reversible."""
    secret = settings.EXPORTS_PSEUDONYM_KEY or settings.SECRET_KEY
    key = hashlib.sha256(f"{secret}|exports.annotator|{task.pk}".encode()).digest()
    return "a_" + hmac.new(key, str(user_id).encode(), hashlib.sha256).hexdigest()[:20]


@dataclass
class RecordBuilder:
    task: Task
    kind: TaskKind = field(init=False)
    _ids: dict[int, str] = field(default_factory=dict, init=False)
    _labels: dict[str | None, str] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.kind = self.task.kind_impl

    def annotator(self, user_id: int) -> str:
        if user_id not in self._ids:
            if len(self._ids) > 100_000:  # bound the cache on huge rounds with many writers
                self._ids.clear()
            self._ids[user_id] = annotator_id(self.task, user_id)
        return self._ids[user_id]

    def label(self, target: RawJson | None, validated: RawJson | None) -> str:
        """The label a model should learn: the validated label, else the writer's target (cached text)."""
        text = validated if validated is not None else target
        if text not in self._labels:
            if len(self._labels) > 10_000:  # free-text answers (QA): keep the cache bounded
                self._labels.clear()
            self._labels[text] = self.kind.target_label(decoded(text))
        return self._labels[text]

    def record(self, row: dict[str, Any], exclusion: str | None) -> dict[str, Any]:
        raw = {column: raw_json(row[f"j_{column}"]) for column in JSON_SOURCES}
        return {
            "example_id": row["id"],
            "task": self.task.slug,
            "round": row["round__number"],
            "split": row["split"],
            "context_id": row["context_id"],
            "context": raw["context"],
            "input": raw["input"],
            "target": raw["target"],
            "validated_label": raw["validated_label"],
            "label": self.label(raw["target"], raw["validated_label"]),
            "reliability_outcome": row["reliability__outcome"],
            "reliability_label": raw["reliability_label"],
            "reliability": row["reliability__confidence"],
            "consensus": row["consensus"],
            "votes_correct": row["v_correct"],
            "votes_incorrect": row["v_incorrect"],
            "votes_flagged": row["v_flagged"],
            "fooled": row["fooled"],
            "ensemble_prediction": raw["ensemble_prediction"],
            "model_predictions": raw["model_predictions"],
            "model_versions": raw["model_versions"],
            "hardness_score": row["context__hardness_score"],
            "annotator_id": self.annotator(row["author_id"]),
            "created_at": row["created_at"].isoformat(),
            "exclusion": exclusion,
            "assistance": row["assistance"] or None,
            "suggested_text": row["suggested_text"] or None,
            "edit_distance": row["edit_distance"],
            "assistant_model": (f"{row['suggestion__provider']}: {row['suggestion__model']}"
                                if row["assistance"] and row["suggestion__provider"] else None),
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
    task: Task, examples: QuerySet, chunk_size: int = CHUNK_SIZE, mark_exclusion: bool = False
) -> Iterator[list[dict[str, Any]]]:
    """Records of `examples` (ordered by id), `chunk_size` at a time, streamed from the database."""
    builder = RecordBuilder(task)
    as_text = {f"j_{column}": Cast(source, TextField()) for column, source in JSON_SOURCES.items()}
    votes = {f"v_{verdict}": vote_count(verdict) for verdict in Validation.Verdict.values}
    rows = examples.order_by("id").values(*ROW_FIELDS, **as_text, **votes)
    with streaming_read(examples.db):
        for chunk in batched(rows.iterator(chunk_size=chunk_size), chunk_size):
            yield [builder.record(row, exclusion_of(row) if mark_exclusion else None) for row in chunk]
