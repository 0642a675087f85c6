"""Prediction-file uploads: a researcher's predictions for a task's public test sets, scored like a model on what
predictions allow, and ranked on the leaderboard with a "predictions only" mark.

(First version from the lead: the leaderboard's rows. Validation, scoring, pages and API are the prediction
part's.)
"""

from __future__ import annotations

from typing import Any

from modelzoo.intervals import interval_of
from rounds.models import PredictionScore, PredictionUpload
from tasks.models import Task


def leaderboard_rows(task: Task, columns: list[dict[str, Any]], counted: list[str], metric: str) -> list[dict[str, Any]]:
    """One leaderboard row per scored upload, shaped as `rounds.leaderboard._row`'s, with no throughput or memory
    (predictions have neither) and `predictions_only` set."""
    rows = []
    uploads = (PredictionUpload.objects.filter(task=task, status=PredictionUpload.Status.SCORED)
               .select_related("uploaded_by").prefetch_related("scores"))
    for upload in uploads:
        by_set = {s.dataset: s for s in upload.scores.all() if s.status == PredictionScore.Status.SCORED}
        cells, scores = [], {}
        for column in columns:
            score = by_set.get(column["name"])
            value = score.metrics.get(metric) if score else None
            interval = (interval_of(score.metrics, metric, score.size) if score else None) or [None, None]
            cells.append(None if value is None else {"value": value, "low": interval[0], "high": interval[1],
                                                      "size": score.size, "stale": score.size != column["size"]})
            scores[column["name"]] = value
        known = [scores[name] for name in counted if scores.get(name) is not None]
        rows.append({
            "id": f"p{upload.pk}", "version": None, "name": upload.name, "status": upload.status,
            "source": f"predictions by {upload.uploaded_by.username}", "predictions_only": True,
            "opponent": None, "upload_id": None, "prediction_upload_id": upload.pk, "in_next_ensemble": False,
            "rounds": [], "scores": scores, "cells": cells,
            "performance": round(sum(known) / len(known), 4) if known else None,
            "throughput": None, "memory_mb": None, "dynascore": None,
        })
    return rows
