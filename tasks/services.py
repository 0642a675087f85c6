"""Use cases for tasks and rounds. Round transitions themselves are `tasks.round_state`."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from tasks import round_state
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
    """Close the open round (if any), then create the next round and open it, in one transaction.

    Without retraining: the round pipeline (`rounds.services.start_pipeline`) is the way with models."""
    round_state.lock_task(task.pk)
    current = task.current_round
    if current is not None:
        round_state.close_round(current)
    return round_state.open_draft(round_state.draft_round(task, description=description))
