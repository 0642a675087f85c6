"""`{% load example_figures %}`: a task's example figures (MER, vMER, ...) for the task pages, which the
tasks app renders without importing the apps above it."""

from __future__ import annotations

from typing import Any

from django import template

from annotation.models import Example

register = template.Library()


@register.simple_tag
def task_figures(task) -> dict[str, Any]:
    """`{% task_figures task as figures %}`: the task's figures over every round."""
    return Example.objects.filter(round__task=task).figures()


@register.simple_tag
def round_figures(task) -> list[dict[str, Any]]:
    """`{% round_figures task as rows %}`: one row per round, `{"round": Round, "figures": {...}}`."""
    per_round = Example.objects.filter(round__task=task).figures_by("round__number")
    empty = Example.objects.none().figures()
    return [{"round": r, "figures": per_round.get(r.number, empty)} for r in task.rounds.all()]
