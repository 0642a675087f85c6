"""The record schema of every export file, and how an Example row becomes a record.

Rows are read in chunks (`iterator(chunk_size=…)`, a server-side cursor on PostgreSQL); the votes and
the anonymised annotator ids of one chunk are fetched with one extra query, so memory stays flat.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet

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
}

ROW_FIELDS = (
    "id",
    "round__number",
    "split",
    "context_id",
    "context__payload",
    "context__hardness_score",
    "input",
    "target",
    "validated_label",
    "consensus",
    "fooled",
    "ensemble_prediction",
    "model_predictions",
    "model_versions",
    "author_id",
    "created_at",
    "flagged",
)
CHUNK_SIZE = 2000


def batched(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    """itertools.batched (Python 3.12) for 3.11."""
    while chunk := list(islice(items, size)):
        yield chunk


def columns() -> list[tuple[str, str]]:
    return list(COLUMNS.items())


def column_names() -> list[str]:
    return list(COLUMNS)


def annotator_id(task: Task, user_id: int) -> str:
    """A salted HMAC of the user id: stable within a task, unlinkable across tasks, never reversible."""
    key = hashlib.sha256(f"{settings.SECRET_KEY}|exports.annotator|{task.pk}".encode()).digest()
    return "a_" + hmac.new(key, str(user_id).encode(), hashlib.sha256).hexdigest()[:20]


@dataclass
class RecordBuilder:
    task: Task
    kind: TaskKind = field(init=False)
    _ids: dict[int, str] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.kind = self.task.kind_impl

    def annotator(self, user_id: int) -> str:
        if user_id not in self._ids:
            if len(self._ids) > 100_000:  # bound the cache on huge rounds with many writers
                self._ids.clear()
            self._ids[user_id] = annotator_id(self.task, user_id)
        return self._ids[user_id]

    def record(self, row: dict[str, Any], votes: dict[str, int], exclusion: str | None) -> dict[str, Any]:
        gold = row["validated_label"] if row["validated_label"] is not None else row["target"]
        return {
            "example_id": row["id"],
            "task": self.task.slug,
            "round": row["round__number"],
            "split": row["split"],
            "context_id": row["context_id"],
            "context": row["context__payload"],
            "input": row["input"],
            "target": row["target"],
            "validated_label": row["validated_label"],
            "label": self.kind.target_label(gold),
            "consensus": row["consensus"],
            "votes_correct": votes.get(Validation.Verdict.CORRECT, 0),
            "votes_incorrect": votes.get(Validation.Verdict.INCORRECT, 0),
            "votes_flagged": votes.get(Validation.Verdict.FLAGGED, 0),
            "fooled": row["fooled"],
            "ensemble_prediction": row["ensemble_prediction"],
            "model_predictions": row["model_predictions"],
            "model_versions": row["model_versions"],
            "hardness_score": row["context__hardness_score"],
            "annotator_id": self.annotator(row["author_id"]),
            "created_at": row["created_at"].isoformat(),
            "exclusion": exclusion,
        }


def votes_for(example_ids: list[int]) -> dict[int, dict[str, int]]:
    rows = (
        Validation.objects.filter(example_id__in=example_ids)
        .order_by()
        .values("example_id", "verdict")
        .annotate(n=Count("id"))
    )
    votes: dict[int, dict[str, int]] = {}
    for row in rows:
        votes.setdefault(row["example_id"], {})[row["verdict"]] = row["n"]
    return votes


def exclusion_of(row: dict[str, Any]) -> str | None:
    if row["consensus"] in ("rejected", "flagged"):
        return row["consensus"]
    return "flagged_by_writer" if row["flagged"] else None


def record_batches(
    task: Task, examples: QuerySet, chunk_size: int = CHUNK_SIZE, mark_exclusion: bool = False
) -> Iterator[list[dict[str, Any]]]:
    """Records of `examples` (ordered by id), `chunk_size` at a time."""
    builder = RecordBuilder(task)
    rows = examples.order_by("id").values(*ROW_FIELDS).iterator(chunk_size=chunk_size)
    for chunk in batched(rows, chunk_size):
        votes = votes_for([row["id"] for row in chunk])
        yield [
            builder.record(row, votes.get(row["id"], {}), exclusion_of(row) if mark_exclusion else None)
            for row in chunk
        ]
