"""The round dashboard's figures, derived from the rows (never kept as counters), and its charts."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from statistics import median
from typing import Any

from django.utils.translation import gettext

from annotation.managers import rate
from annotation.models import Assistance, Example
from modelzoo.models import EnsembleScore
from rounds import arms, datamaps
from rounds.charts import Series, bar_chart, line_chart, time_labels
from rounds.dashboard_seeds import seed_charts, seed_figures
from rounds.datasets import dataset_label, test_sets
from rounds.leaderboard import primary_metric
from rounds.models import PipelineRun
from study.models import Arm
from tasks import badges, roles
from tasks.models import Round, Task


def visible_rounds(task: Task) -> list[Round]:
    return list(task.rounds.exclude(status=Round.Status.DRAFT).order_by("number"))


def round_figures(task: Task) -> list[dict[str, Any]]:
    per_round = Example.objects.filter(round__task=task).figures_by("round__number")
    empty = Example.objects.none().figures()
    return [{"round": r.number, "status": r.status, **per_round.get(r.number, empty)} for r in visible_rounds(task)]


def fooling_over_time(round_: Round, buckets: int = 12) -> list[dict[str, Any]]:
    """The fooling rate in equal slices of the round's time (scored, not retracted examples): at most
    `buckets` slices, and none shorter than a minute (examples written within a minute are one point)."""
    rows = list(Example.objects.filter(round=round_, retracted=False, fooled__isnull=False)
                .order_by("created_at").values_list("created_at", "fooled"))
    if not rows:
        return []
    start, end = rows[0][0], rows[-1][0]
    buckets = max(1, min(buckets, int((end - start).total_seconds() // 60)))
    width = max((end - start).total_seconds() / buckets, 1e-6)
    counts = [[0, 0] for _ in range(buckets)]
    for created, fooled in rows:
        slot = min(int((created - start).total_seconds() / width), buckets - 1)
        counts[slot][0] += 1
        counts[slot][1] += int(fooled)
    return [{"at": (start + (i + 1) * (end - start) / buckets).isoformat(), "collected": n, "fooled": f,
             "rate": rate(f, n)} for i, (n, f) in enumerate(counts)]


def label_distribution(task: Task) -> dict[str, Any]:
    kind = task.kind_impl
    per_round: dict[int, Counter] = {}
    for number, target in Example.objects.filter(round__task=task, retracted=False).values_list("round__number", "target"):
        per_round.setdefault(number, Counter())[kind.target_label(target)] += 1
    labels = list(getattr(task.typed_config, "labels", [])) or sorted({x for c in per_round.values() for x in c})[:12]
    return {"labels": labels, "rounds": {n: {label: c.get(label, 0) for label in labels} for n, c in sorted(per_round.items())}}


def ensemble_matrix(task: Task) -> dict[str, Any]:
    """Accuracy (the kind's main metric) of each round's ensemble on every test set."""
    metric, sets = primary_metric(task), test_sets(task)
    cells: dict[int, dict[str, float | None]] = {}
    for score in EnsembleScore.objects.filter(task=task, dataset__in=sets):
        cells.setdefault(score.round_number, {})[score.dataset] = score.metrics.get(metric)
    return {"metric": metric, "columns": [{"name": s, "label": dataset_label(s)} for s in sets],
            "rows": [{"round": n, "cells": [cells[n].get(s) for s in sets]} for n in sorted(cells)]}


def round_over_round(task: Task) -> dict[str, Any]:
    """Every round's ensemble (rows) on every test set (columns: each round's test split, the base test set): its
    error, 1 − the kind's first metric (accuracy; exact match for QA, each a share of the set's examples), with a
    95 % Wilson interval from the set's size. The scores are the ones the pipeline stores when a round closes
    (`rounds.evaluation`, EnsembleScore). No rows when fewer than two rounds have an evaluated ensemble."""
    from rounds.statistics import wilson  # the same interval as the simulations' reports

    metric, sets = task.kind_impl.metrics[0], test_sets(task)
    shown = {r.number for r in visible_rounds(task)}
    cells: dict[int, dict[str, dict[str, Any]]] = {}
    for score in EnsembleScore.objects.filter(task=task, dataset__in=sets, round_number__in=shown):
        value = score.metrics.get(metric)
        if value is None or not score.size:
            continue
        wrong = round((1 - float(value)) * score.size)
        interval = wilson(wrong, score.size)
        cells.setdefault(score.round_number, {})[score.dataset] = {
            "error": interval.value, "low": interval.low, "high": interval.high, "wrong": wrong, "size": score.size}
    columns = [{"name": s, "label": dataset_label(s)} for s in sets]
    out = {"metric": metric, "metric_label": metric.replace("_", " "), "columns": columns}
    if len(cells) < 2:
        return {**out, "rows": []}
    return {**out, "rows": [{"round": n, "cells": [cells[n].get(s) for s in sets]} for n in sorted(cells)]}


def before_after(task: Task, limit: int = 10) -> list[dict[str, Any]]:
    """Each round change's comparison, newest first: the live ensemble against the retrained one on every test
    set (the pipeline's compare step), and what happened (deployed, approved, discarded, awaiting)."""
    out = []
    runs = PipelineRun.objects.filter(task=task, comparison__isnull=False).exclude(
        status=PipelineRun.Status.ABANDONED).select_related("decided_by")[:limit]
    for run in runs:
        table = run.comparison or {}
        worse = table.get("worse") or []
        outcome = ("awaiting approval" if run.status == PipelineRun.Status.AWAITING
                   else run.decision or ("deployed" if not worse else run.status))
        out.append({"job": run.pk, "live_round": table.get("live_round"), "new_round": table.get("new_round"),
                    "metric": table.get("metric"), "tolerance": table.get("tolerance"), "worse": worse,
                    "outcome": outcome, "rows": table.get("rows", [])})
    return out


def annotators(task: Task, limit: int = 20) -> list[dict[str, Any]]:
    return badges.add_to(Example.objects.filter(round__task=task).leaderboard()[:limit], task)


def assistant_comparison(round_: Round) -> list[dict[str, Any]]:
    """Examples written with and without the writing assistant in a round: MER, vMER, the validators' rejection
    rate and the median time per example (seconds), with each way of using it (as suggested, edited, own)."""
    examples = Example.objects.filter(round=round_)
    by_mode = examples.figures_by("assistance")
    if not any(mode for mode in by_mode):
        return []
    times: dict[str, list[int]] = {}
    for mode, ms in examples.collected().filter(time_spent_ms__isnull=False).values_list("assistance", "time_spent_ms"):
        times.setdefault(mode, []).append(ms)
    empty = Example.objects.none().figures()

    def row(label: str, key: str, figures: dict[str, Any], spent: list[int]) -> dict[str, Any]:
        return {"label": label, "key": key, **figures,
                "median_seconds": round(median(spent) / 1000, 1) if spent else None}

    rows = [row(gettext("Without the assistant"), "without", by_mode.get("", empty), times.get("", []))]
    assisted = examples.exclude(assistance="")
    rows.append(row(gettext("With the assistant (all)"), "with", assisted.figures(),
                    [ms for mode, spent in times.items() if mode for ms in spent]))
    rows += [row(f"— {label.lower()}", mode, by_mode.get(mode, empty), times.get(mode, []))
             for mode, label in Assistance.choices if mode]
    return rows


def arms_section(task: Task, user: Any, round_number: int | None = None) -> dict[str, Any] | None:
    """The study's arms compared (rounds.arms), for the people who may see it (researchers, the task's owners,
    admins: an interim comparison is not shown to the participants), on a task with arms; None otherwise. One round
    when the page names one (?round=N), else every round."""
    if not roles.has_role(user, roles.RESEARCHER, task) or not Arm.objects.filter(task=task).exists():
        return None
    number = round_number if round_number is not None and task.rounds.filter(number=round_number).exists() else None
    data = arms.comparison(task, number)
    for row in data["arms"]:
        row["shares"] = [row["mer"], row["vmer"], row["rejection_rate"]]  # the page's three share columns
    return data


def dashboard(task: Task, round_number: int | None = None) -> dict[str, Any]:
    rounds = visible_rounds(task)
    chosen = next((r for r in rounds if r.number == round_number), rounds[-1] if rounds else None)
    return {"rounds": round_figures(task), "round": chosen.number if chosen else None,
            "fooling_over_time": fooling_over_time(chosen) if chosen else [],
            "labels": label_distribution(task), "ensembles": ensemble_matrix(task), "annotators": annotators(task),
            "seeds": seed_figures(chosen) if chosen else None,
            "assistant": assistant_comparison(chosen) if chosen else [],
            "data_map": datamaps.summary(chosen),
            "before_after": before_after(task)}


def charts(data: dict[str, Any]) -> dict[str, Any]:
    """The dashboard's figures as SVG."""
    rounds = [f"round {r['round']}" for r in data["rounds"]]
    labels = data["labels"]
    ens = data["ensembles"]
    over_time = data["fooling_over_time"]
    return {
        **seed_charts(data.get("seeds")),
        "data_map": datamaps.scatter(data.get("data_map")),
        "mer": bar_chart("MER and vMER per round", rounds, [
            Series("MER", [r["mer"] for r in data["rounds"]]), Series("vMER", [r["vmer"] for r in data["rounds"]])]),
        "fooling": line_chart(f"Fooling rate over time, round {data['round']}",
                              time_labels([datetime.fromisoformat(t["at"]) for t in over_time]),
                              [Series("fooling rate", [t["rate"] for t in over_time])]),
        "labels": bar_chart("Label distribution of collected examples", [f"round {n}" for n in labels["rounds"]],
                            [Series(label, [c[label] for c in labels["rounds"].values()]) for label in labels["labels"]],
                            percent=False, y_title="examples"),
        "ensembles": bar_chart(f"{ens['metric']} of each round's ensemble on every test set",
                               [c["label"] for c in ens["columns"]],
                               [Series(f"round {row['round']} ensemble", row["cells"]) for row in ens["rows"]]),
    }
