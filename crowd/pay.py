"""The pay report of a batch: per assignment, the work done on the batch's task while the assignment ran
and the bonus the task's rates (`crowd.pay`) give for it.

An assignment's window runs from following its link to its completion (or to now while it is open).
- examples: written in the window and not retracted;
- verified fooling examples: those of them that fooled the model and were verified;
- validations: crowd votes cast in the window that still count (a vote withdrawn on suspension or for low
  gold accuracy is not paid), plus answers on gold items (the worker could not tell them apart).
bonus = examples x per_example + verified fooling x per_verified_fooling + validations x per_validation,
rounded half up to the cent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from django.utils import timezone

from annotation.models import Example
from crowd.models import Assignment, WorkerBatch
from dynabench_site import csvsafe
from validation.models import GoldAnswer, Validation

CENT = Decimal("0.01")
COLUMNS = ["worker_id", "assignment_id", "username", "followed_at", "completed_at", "examples",
           "verified_fooling", "validations", "excluded_votes", "bonus", "currency", "completion_code"]


@dataclass(frozen=True)
class PayRow:
    assignment: Assignment
    examples: int
    verified_fooling: int
    validations: int
    excluded_votes: int
    bonus: Decimal

    def as_dict(self, currency: str) -> dict[str, object]:
        a = self.assignment
        return {
            "worker_id": a.worker_id, "assignment_id": a.assignment_id,
            "username": a.user.username if a.user else "", "followed_at": _iso(a.followed_at),
            "completed_at": _iso(a.completed_at), "examples": self.examples, "verified_fooling": self.verified_fooling,
            "validations": self.validations, "excluded_votes": self.excluded_votes, "bonus": f"{self.bonus:.2f}",
            "currency": currency, "completion_code": a.completion_code if a.completed_at else "",
        }


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value else ""


def money(value: float) -> Decimal:
    return Decimal(str(value))


def row(assignment: Assignment, now: datetime) -> PayRow:
    if assignment.user_id is None or assignment.followed_at is None:
        return PayRow(assignment, 0, 0, 0, 0, Decimal("0.00"))
    task = assignment.batch.task
    window = {"created_at__gte": assignment.followed_at, "created_at__lte": assignment.completed_at or now}
    written = Example.objects.filter(author_id=assignment.user_id, round__task=task, retracted=False, **window)
    votes = Validation.objects.filter(validator_id=assignment.user_id, example__round__task=task,
                                      mode=Validation.Mode.CROWD, **window)
    gold = GoldAnswer.objects.filter(validator_id=assignment.user_id, task=task, **window).count()
    examples = written.count()
    fooling = written.filter(fooled=True, consensus=Example.Consensus.VERIFIED).count()
    validations = votes.filter(counted=True).count() + gold
    rates = task.typed_config.crowd.pay
    bonus = (examples * money(rates.per_example) + fooling * money(rates.per_verified_fooling)
             + validations * money(rates.per_validation)).quantize(CENT, rounding=ROUND_HALF_UP)
    return PayRow(assignment, examples, fooling, validations, votes.filter(counted=False).count(), bonus)


def report(batch: WorkerBatch) -> list[PayRow]:
    now = timezone.now()
    return [row(a, now) for a in batch.assignments.select_related("user", "batch__task")]


def total(rows: list[PayRow]) -> Decimal:
    return sum((r.bonus for r in rows), Decimal("0.00"))


def csv_text(batch: WorkerBatch) -> Iterator[str]:
    """The report as CSV lines (header first), ready for a bulk bonus upload."""
    currency = batch.task.typed_config.crowd.pay.currency
    rows = [r.as_dict(currency) for r in report(batch)]
    yield csvsafe.rows_text([COLUMNS, *([row[c] for c in COLUMNS] for row in rows)])
