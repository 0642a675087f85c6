"""Use cases for tasks and rounds."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from tasks.models import Round, Task


def create_task(*, slug: str, name: str, kind: str, config: dict[str, Any] | None = None, owners=(), visibility=Task.Visibility.PUBLIC) -> Task:
    """Create a task from a kind preset, overridden by `config` (validated by the kind's schema)."""
    task = Task(slug=slug, name=name, kind=kind, config=config or {}, visibility=visibility)
    task.full_clean(exclude=["config"])  # config is validated by Task.clean with the kind's schema
    task.save()
    task.owners.set(owners)
    return task


@transaction.atomic
def open_next_round(task: Task, description: str = "") -> Round:
    """Close the open round (if any) and open the next one. The database allows one open round only."""
    now = timezone.now()
    Task.objects.select_for_update().filter(pk=task.pk).first()  # serialise concurrent openers
    current = task.rounds.filter(status=Round.Status.OPEN).first()
    if current is not None:
        close_round(current)
    last = task.rounds.order_by("-number").first()
    number = (last.number + 1) if last else 1
    return Round.objects.create(task=task, number=number, status=Round.Status.OPEN, opened_at=now, description=description)


def close_round(round_: Round) -> Round:
    if round_.status != Round.Status.OPEN:
        raise ValidationError(f"round {round_.number} is {round_.status}, not open")
    round_.status = Round.Status.CLOSED
    round_.closed_at = timezone.now()
    round_.save(update_fields=["status", "closed_at"])
    return round_
