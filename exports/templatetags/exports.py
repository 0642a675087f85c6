"""`{% load exports %}{% dataset_downloads task %}`: the datasets section of the task page (and of the owner
console's Datasets page): per round, what is published and what is not, the downloads a person may use, and for
owners what publishing now would give researchers (rows per split, how many validated, warnings) with the button."""

from __future__ import annotations

from django import template

from exports import access, services, splits
from exports.formats import FORMATS, get_format
from exports.models import DatasetSnapshot
from tasks.roles import can_manage

register = template.Library()


def load_format(snapshot: DatasetSnapshot) -> str:
    """The format the bundle's card configures, what `load_dataset(<the unzipped folder>)` reads: a typed one where
    the snapshot has it (cards before issue 39, whose snapshots have no validated counts, configured the first)."""
    first = snapshot.formats[0] if snapshot.formats else ""
    if not snapshot.validated:
        return first
    return next((name for name in snapshot.formats if name in FORMATS and get_format(name).typed), first)


@register.inclusion_tag("exports/_downloads.html", takes_context=True)
def dataset_downloads(context, task, console: bool = False) -> dict:
    request = context["request"]
    user = request.user
    allowed = {s.pk for s in access.downloadable(user, task)}
    manages = can_manage(user, task)
    snapshots = list(DatasetSnapshot.objects.filter(task=task).select_related("round", "task")
                     .order_by("-round__number", "-version"))
    rounds = []
    for round_ in reversed(list(splits.rounds_with_data(task))):
        own = [{"snapshot": s, "allowed": s.pk in allowed, "loads": load_format(s)}
               for s in snapshots if s.round_id == round_.pk]
        rounds.append({
            "round": round_,
            "versions": own,
            "latest": own[0]["snapshot"] if own else None,
            "collected": splits.exported(round_).count() if not own else None,
            "plan": services.publish_plan(round_) if manages else None,
        })
    return {
        "task": task,
        "rounds": rounds,
        "published": bool(snapshots),
        "downloadable": bool(allowed),
        "can_manage": manages,
        "console": console,
        "formats": list(FORMATS),
        "audiences": DatasetSnapshot.Audience.choices,
        "csrf_token": context.get("csrf_token"),
        "user": user,
        "request": request,
    }
