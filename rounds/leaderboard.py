"""The model leaderboard: model versions x test sets, throughput, memory, and a Dynascore-style aggregate.

Each test-set column says what the set is, how many rows it has now, and each figure comes with its 95 %
interval (`modelzoo.intervals`: Wilson for a share such as accuracy, a bootstrap for F1). A set smaller than
`rounds.datasets.MIN_TEST_SIZE` is flagged "small": shown, but left out of the Dynascore (and it never stops a
deploy: `rounds.steps.compare`), unless no set is large enough, when every set counts and the page says so.

Dynascore here: Dynaboard's (Ma et al. 2021), computed in `rounds.dynaboard` — each figure (performance: the
mean of the kind's main metric over the counted test sets; throughput; memory; robustness and fairness: the mean
over the counted sets of `Evaluation.metrics["robustness"]` / `["fairness"]` where measured) is put in units of
performance by its average marginal rate of substitution (AMRS), then averaged with weights. The owner's weights
(`task.typed_config.dynascore`; Dynabench's defaults are performance 4, throughput 1, memory 1) are the default; a
viewer may pass others as query parameters (`?performance=4&throughput=1&memory=1&robustness=1&fairness=1`), and
each row then carries its rank under both. A row's Dynascore is over the figures it has (the weights renormalised
over them): prediction-file rows (`rounds.predictions.leaderboard_rows`, marked "predictions only") have no
throughput or memory, and a model not yet measured for robustness or fairness has neither.

A language model opponent is ranked like any model (it is evaluated on the same test sets when its round's
ensemble is deployed or the pipeline evaluates), and its row says that it decides no verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Prefetch

from modelzoo import opponent
from modelzoo.intervals import interval_of
from modelzoo.models import Evaluation, ModelVersion
from rounds import dynaboard
from rounds.datasets import describe_sets, test_sets
from tasks.models import Task

MoreRows = Callable[[Task, list[dict[str, Any]], list[str], str], list[dict[str, Any]]]
HIDDEN = (ModelVersion.Status.TRAINING, ModelVersion.Status.FAILED)


def primary_metric(task: Task) -> str:
    metrics = task.kind_impl.metrics
    return "f1" if "f1" in metrics else metrics[0]


def leaderboard(task: Task, weights: dict[str, float] | None = None,
                more_rows: MoreRows | None = None) -> dict[str, Any]:
    """The board: columns, rows ranked by Dynascore under `weights` (a viewer's; None: the owner's), and each
    row's rank under the owner's weights beside it. `more_rows(task, columns, counted, metric)` adds rows that are
    not model versions: the page and the API pass `rounds.predictions.leaderboard_rows` (prediction files).
    It is passed in, not imported: `rounds.predictions` imports `rounds.evaluation`, which imports this module."""
    columns = describe_sets(task, test_sets(task))
    metric = primary_metric(task)
    counted = [c["name"] for c in columns if not c["small"]]
    all_small = bool(columns) and not counted
    counted = counted or [c["name"] for c in columns]  # no set is large enough: every one counts, and the page says so
    evaluations = Evaluation.objects.filter(dataset__in=[c["name"] for c in columns]).only(
        "model_version_id", "dataset", "size", "metrics")  # only the listed sets' figures are read
    versions = (ModelVersion.objects.filter(task=task).exclude(status__in=HIDDEN)
                .prefetch_related(Prefetch("evaluations", queryset=evaluations), "memberships__ensemble__round")
                .select_related("measurement", "upload__uploaded_by"))
    rows = [_row(v, columns, counted, metric) for v in versions]
    for row in (more_rows(task, columns, counted, metric) if more_rows else []):
        rows.append({"robustness": None, "fairness": None, "robustness_interval": None, "fairness_interval": None,
                     **row})
    owner_weights = {m: float(v) for m, v in task.typed_config.dynascore.model_dump().items()}
    board = add_dynascore(rows, owner_weights, weights)
    rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, _tie(r)))
    return {"metric": metric, "metric_label": metric.replace("_", " "), "weights": weights or owner_weights,
            "owner_weights": owner_weights, "viewer_weights": weights, "rows": rows,
            "opponents": [r for r in rows if r["opponent"]],
            "predictions_only": any(r.get("predictions_only") for r in rows),
            "columns": columns, "all_small": all_small, "min_size": columns[0]["min_size"] if columns else None,
            "counted": counted, **board}


def _tie(row: dict[str, Any]) -> tuple:
    return (row["version"] is None, row["version"] or 0, row["name"], str(row["id"]))


def _mean_figure(by_set: dict[str, Any], counted: list[str], key: str) -> tuple[float | None, list[float] | None]:
    """A model's robustness or fairness: the mean over the counted sets where it was measured, with the mean of
    the sets' interval bounds (wider than the mean's own interval: never narrower than the evidence allows)."""
    values, lows, highs = [], [], []
    for name in counted:
        evaluation = by_set.get(name)
        value = evaluation.metrics.get(key) if evaluation is not None else None
        if value is None:
            continue
        values.append(float(value))
        bounds = (evaluation.metrics.get("intervals") or {}).get(key)
        if bounds and len(bounds) == 2 and None not in bounds:
            lows.append(float(bounds[0]))
            highs.append(float(bounds[1]))
    if not values:
        return None, None
    interval = [round(sum(lows) / len(lows), 4), round(sum(highs) / len(highs), 4)] if len(lows) == len(values) else None
    return round(sum(values) / len(values), 4), interval


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
    robustness, robustness_interval = _mean_figure(by_set, counted, "robustness")
    fairness, fairness_interval = _mean_figure(by_set, counted, "fairness")
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
        "robustness": robustness, "robustness_interval": robustness_interval,
        "fairness": fairness, "fairness_interval": fairness_interval, "predictions_only": False,
        "dynascore": None,
    }


def add_dynascore(rows: list[dict[str, Any]], owner_weights: dict[str, float],
                  weights: dict[str, float] | None = None) -> dict[str, Any]:
    """Each row's Dynascore under `weights` (None: the owner's) and under the owner's, both ranks, how far the row
    moved (positive: up), and the figures its Dynascore is over. Returns the board's AMRS figures and what was
    left out for every row, and why."""
    figures = [{"performance": None if r["performance"] is None else 100 * r["performance"],
                "throughput": r["throughput"], "memory": r["memory_mb"],
                "robustness": None if r.get("robustness") is None else 100 * r["robustness"],
                "fairness": None if r.get("fairness") is None else 100 * r["fairness"]} for r in rows]
    # A row with no performance (not evaluated on any test set yet) is not ranked.
    figures = [f if f["performance"] is not None else dict.fromkeys(f) for f in figures]
    result = dynaboard.dynascores(figures, weights or owner_weights)
    owner = result["scores"] if weights is None else dynaboard.dynascores(figures, owner_weights)["scores"]
    keys = [_tie(r) for r in rows]
    ranks, owner_ranks = dynaboard.ranks(result["scores"], keys), dynaboard.ranks(owner, keys)
    in_effect = weights or owner_weights
    for row, score, owner_score, rank, owner_rank, terms in zip(rows, result["scores"], owner, ranks, owner_ranks,
                                                               result["terms"], strict=True):
        row["dynascore"] = None if score is None else round(score, 2)
        row["owner_dynascore"] = None if owner_score is None else round(owner_score, 2)
        row["rank"], row["owner_rank"] = rank, owner_rank
        row["moved"] = owner_rank - rank if rank is not None and owner_rank is not None else 0
        row["terms"] = {m: round(v, 4) for m, v in terms.items()}
        row["over"] = [m for m in dynaboard.METRICS if m in terms and in_effect.get(m, 0) > 0]
        row["lacks"] = [m for m in dynaboard.METRICS if m not in terms and in_effect.get(m, 0) > 0
                        and m not in result["left_out"] and row["performance"] is not None]
    return {"amrs": {m: None if v is None else round(v, 6) for m, v in result["amrs"].items()},
            "memory_offset": result["offsets"]["memory"], "left_out": result["left_out"],
            "weighted_left_out": {m: why for m, why in result["left_out"].items() if in_effect.get(m, 0) > 0}}
