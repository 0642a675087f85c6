from __future__ import annotations

from typing import Any

from django import template

from validation.stats import task_stats

register = template.Library()


@register.filter
def label_text(value: Any) -> str:
    """A label or prediction as people read it: a class name, or the text of a QA answer."""
    if value is None or value == "":
        return "—"
    if isinstance(value, dict):
        return str(value.get("label", value.get("text", value)))
    return str(value)


@register.inclusion_tag("validation/_figures.html")
def validation_figures(task) -> dict[str, Any]:
    """`{% validation_figures task %}`: the task page's validation figures and writers' leaderboard."""
    return {"task": task, "stats": task_stats(task)}
