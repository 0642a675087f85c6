"""Round transitions: the one place that writes `Round.status`.

    draft ──open──▶ open ──close──▶ closed

Nothing else moves a round: no reopening, no skipping from draft to closed. A task has at most one open
round (the service checks it and says which; a partial unique index backs it up). Opening stamps
`opened_at`, closing stamps `closed_at`. A transition the rules forbid raises `Conflict` (HTTP 409).
The pipeline, the demo loader and `tasks.services.open_next_round` all go through here.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from dynabench_site import access_cache
from dynabench_site.errors import Conflict
from tasks import signals
from tasks.models import Round, Task

Status = Round.Status
ALLOWED: dict[str, str] = {Status.DRAFT: Status.OPEN, Status.OPEN: Status.CLOSED}  # from -> the one way on
STAMP = {Status.OPEN: "opened_at", Status.CLOSED: "closed_at"}


def draft_round(task: Task, number: int | None = None, description: str = "") -> Round:
    """The round `number` (default: after the task's last one), created as a draft if it does not exist."""
    if number is None:
        number = (task.rounds.aggregate(n=Max("number"))["n"] or 0) + 1
    round_, _ = Round.objects.get_or_create(
        task=task, number=number, defaults={"status": Status.DRAFT, "description": description}
    )
    return round_


def open_draft(round_: Round) -> Round:
    """draft -> open; refused while another round of the task is open."""
    return transition(round_, Status.OPEN)


def close_round(round_: Round) -> Round:
    """open -> closed: the round takes no new examples."""
    return transition(round_, Status.CLOSED)


@transaction.atomic
def transition(round_: Round, to: str) -> Round:
    """Move `round_` to `to` if the rules allow it; updates `round_` in place and returns it."""
    lock_task(round_.task_id)
    current = Round.objects.select_for_update().get(pk=round_.pk)
    if ALLOWED.get(current.status) != to:
        raise Conflict(f"round {current.number} is {current.status}; it cannot become {to}", field="round")
    if to == Status.OPEN:
        _check_none_open(current)
    fields = {"status": to, STAMP[to]: timezone.now()}
    Round.objects.filter(pk=current.pk, status=current.status).update(**fields)
    access_cache.bump()  # a queryset update sends no signal; the cached open round is stale now
    for name, value in fields.items():
        setattr(round_, name, value)
    signals.round_changed.send(sender=Round, round_=round_, status=to)
    return round_


def lock_task(task_id: int) -> None:
    """Serialise transitions of one task's rounds (two owners opening at once)."""
    Task.objects.select_for_update().filter(pk=task_id).first()


def _check_none_open(round_: Round) -> None:
    other = Round.objects.filter(task_id=round_.task_id, status=Status.OPEN).exclude(pk=round_.pk).first()
    if other is not None:
        raise Conflict(
            f"round {other.number} of this task is open; close it before opening round {round_.number}", field="round"
        )
