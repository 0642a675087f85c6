"""The model leaderboard: model versions x test sets, throughput, memory, and a Dynascore-style aggregate.

Dynascore here: each measured quantity is scaled to [0, 1] across the listed models (performance is the
mean of the kind's main metric over the test sets; throughput / the best throughput; the smallest memory /
memory), then averaged with the owner's weights (`task.typed_config.dynascore`; Dynabench's defaults are
performance 4, throughput 1, memory 1). Robustness and fairness count once they are measured.
"""

from __future__ import annotations

from typing import Any

from modelzoo import opponent
from modelzoo.models import ModelVersion
from rounds.datasets import dataset_label, test_sets
from tasks.models import Task

HIDDEN = (ModelVersion.Status.TRAINING, ModelVersion.Status.FAILED)


def primary_metric(task: Task) -> str:
    metrics = task.kind_impl.metrics
    return "f1" if "f1" in metrics else metrics[0]


def leaderboard(task: Task) -> dict[str, Any]:
    sets = test_sets(task)
    metric = primary_metric(task)
    versions = (ModelVersion.objects.filter(task=task).exclude(status__in=HIDDEN)
                .prefetch_related("evaluations", "memberships__ensemble__round").select_related("measurement", "upload__uploaded_by"))
    rows = [_row(v, sets, metric) for v in versions]
    weights = task.typed_config.dynascore.model_dump()
    add_dynascore(rows, weights)
    rows.sort(key=lambda r: (r["dynascore"] is None, -(r["dynascore"] or 0), r["version"]))
    return {"metric": metric, "weights": weights, "rows": rows,
            "columns": [{"name": s, "label": dataset_label(s)} for s in sets]}


def _row(version: ModelVersion, sets: list[str], metric: str) -> dict[str, Any]:
    by_set = {e.dataset: e for e in version.evaluations.all()}
    scores = {s: by_set[s].metrics.get(metric) if s in by_set else None for s in sets}
    known = [v for v in scores.values() if v is not None]
    measurement = getattr(version, "measurement", None)
    upload = getattr(version, "upload", None)
    rounds = sorted({m.ensemble.round.number for m in version.memberships.all() if m.ensemble.active})
    return {
        "id": version.pk, "version": version.version, "name": version.name, "status": version.status,
        "source": (f"upload by {upload.uploaded_by.username}" if upload
                   else "language model opponent" if opponent.is_llm(version) else "trained"),
        "upload_id": upload.pk if upload else None, "in_next_ensemble": bool(upload and upload.in_next_ensemble),
        "rounds": rounds, "scores": scores, "cells": [scores[s] for s in sets],
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
