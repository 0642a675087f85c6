"""The model leaderboard: model versions x test sets, throughput, memory, and a Dynascore-style aggregate.

Each test-set column says what the set is, how many rows it has now, and each figure comes with its 95 %
interval (`modelzoo.intervals`: Wilson for a share such as accuracy, a bootstrap for F1). A set smaller than
`rounds.datasets.MIN_TEST_SIZE` is flagged "small": shown, but left out of the Dynascore (and it never stops a
deploy: `rounds.steps.compare`), unless no set is large enough, when every set counts and the page says so.

Dynascore here: each measured quantity is scaled to [0, 1] across the listed models (performance is the
mean of the kind's main metric over the counted test sets; throughput / the best throughput; the smallest memory /
memory), then averaged with the owner's weights (`task.typed_config.dynascore`; Dynabench's defaults are
performance 4, throughput 1, memory 1). Robustness and fairness count once they are measured.

A language model opponent is ranked like any model (it is evaluated on the same test sets when its round's
ensemble is deployed or the pipeline evaluates), and its row says that it decides no verdict.
"""

from __future__ import annotations

from typing import Any

from modelzoo import opponent
from modelzoo.intervals import interval_of
from modelzoo.models import ModelVersion
from rounds.datasets import describe_sets, test_sets
from tasks.models import Task

HIDDEN = (ModelVersion.Status.TRAINING, ModelVersion.Status.FAILED)


def primary_metric(task: Task) -> str:
    metrics = task.kind_impl.metrics
    return "f1" if "f1" in metrics else metrics[0]


def leaderboard(task: Task) -> dict[str, Any]:
    columns = describe_sets(task, test_sets(task))
    metric = primary_metric(task)
    counted = [c["name"] for c in columns if not c["small"]]
    all_small = bool(columns) and not counted
    counted = counted or [c["name"] for c in columns]  # no set is large enough: every one counts, and the page says so
    versions = (ModelVersion.objects.filter(task=task).exclude(status__in=HIDDEN)
                .prefetch_related("evaluations", "memberships__ensemble__round").select_related("measurement", "upload__uploaded_by"))
    rows = [_row(v, columns, counted, metric) for v in versions]
    weights = task.typed_config.dynascore.model_dump()
    add_dynascore(rows, weights)
    rows.sort(key=lambda r: (r["dynascore"] is None, -(r["dynascore"] or 0), r["version"]))
    return {"metric": metric, "metric_label": metric.replace("_", " "), "weights": weights, "rows": rows,
            "opponents": [r for r in rows if r["opponent"]],
            "columns": columns, "all_small": all_small, "min_size": columns[0]["min_size"] if columns else None,
            "counted": counted}


def _cell(evaluation, column: dict[str, Any], metric: str) -> dict[str, Any] | None:
    if evaluation is None or evaluation.metrics.get(metric) is None:
        return None
    interval = interval_of(evaluation.metrics, metric, evaluation.size)
    return {"value": evaluation.metrics[metric], "low": interval[0] if interval else None,
            "high": interval[1] if interval else None, "size": evaluation.size,
            "stale": bool(evaluation.size) and evaluation.size != column["size"]}


def _row(version: ModelVersion, columns: list[dict[str, Any]], counted: list[str], metric: str) -> dict[str, Any]:
    by_set = {e.dataset: e for e in version.evaluations.all()}
    cells = [_cell(by_set.get(c["name"]), c, metric) for c in columns]
    scores = {c["name"]: cell["value"] if cell else None for c, cell in zip(columns, cells, strict=True)}
    known = [scores[name] for name in counted if scores.get(name) is not None]
    measurement = getattr(version, "measurement", None)
    upload = getattr(version, "upload", None)
    rounds = sorted({m.ensemble.round.number for m in version.memberships.all() if m.ensemble.active})
    is_opponent = opponent.is_llm(version)
    return {
        "id": version.pk, "version": version.version, "name": version.name, "status": version.status,
        "source": (f"upload by {upload.uploaded_by.username}" if upload
                   else "language model opponent" if is_opponent else "trained"),
        "opponent": opponent.standing(version) if is_opponent else None,
        "upload_id": upload.pk if upload else None, "in_next_ensemble": bool(upload and upload.in_next_ensemble),
        "rounds": rounds, "scores": scores, "cells": cells,
        "performance": round(sum(known) / len(known), 4) if known else None,
        "throughput": measurement.throughput if measurement else None,
        "memory_mb": measurement.memory_mb if measurement else None,
        "dynascore": None,
    }


def add_dynascore(rows: list[dict[str, Any]], weights: dict[str, float]) -> None:
    best_speed = max((r["throughput"] for r in rows if r["throughput"]), default=None)
    least_memory = min((r["memory_mb"] for r in rows if r["memory_mb"]), default=None)
    for row in rows:
        if row["performance"] is None:
            continue
        parts = {"performance": row["performance"]}
        if best_speed:
            parts["throughput"] = (row["throughput"] or 0) / best_speed
        if least_memory:
            parts["memory"] = least_memory / row["memory_mb"] if row["memory_mb"] else 0.0
        total = sum(weights.get(k, 0) for k in parts)
        if total > 0:
            row["dynascore"] = round(100 * sum(weights.get(k, 0) * v for k, v in parts.items()) / total, 2)
