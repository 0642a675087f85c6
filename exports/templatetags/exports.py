"""`{% load exports %}{% dataset_downloads task %}`: the downloads section of the task page."""

from __future__ import annotations

from django import template

from exports import access
from exports.formats import FORMATS
from exports.models import DatasetSnapshot
from exports.splits import SPLITS
from tasks.roles import can_manage

register = template.Library()


@register.inclusion_tag("exports/_downloads.html", takes_context=True)
def dataset_downloads(context, task) -> dict:
    user = context["request"].user
    allowed = {s.pk for s in access.downloadable(user, task)}
    snapshots = DatasetSnapshot.objects.filter(task=task).select_related("round", "task")
    manages = can_manage(user, task)
    return {
        "task": task,
        # Only the splits that hold rows get download links (an empty dev or test file helps nobody).
        "rows": [{"snapshot": s, "allowed": s.pk in allowed,
                  "splits": [name for name in SPLITS if (s.counts or {}).get(name)]} for s in snapshots],
        "can_manage": manages,
        "rounds": list(task.rounds.order_by("number")) if manages else [],
        "formats": list(FORMATS),
        "splits": SPLITS,
        "audiences": DatasetSnapshot.Audience.choices,
        "csrf_token": context.get("csrf_token"),
        "user": user,
        "request": context["request"],
    }
