"""Gold items: examples with an owner-vouched verdict, mixed unannounced into the validation queue, and
each validator's accuracy on them.

The rules, in one place:
- an owner makes a *decided* example gold (verified: the right verdict is "correct"; rejected: "incorrect"
  with the corrected label), and only one that the task's queue could serve (in scope, not retracted), so
  nothing about it gives it away;
- a validator's answer on a gold item is a `GoldAnswer`: right when its outcome equals the gold one
  (an "incorrect" answer must name the same label); it never changes the example's consensus;
- once a validator answered `gold_min_answers` gold items of a task, an accuracy below `gold_min_accuracy`
  *blocks* them on that task: the queue serves them nothing more, their votes stop counting
  (`validation.services.withdraw_votes`), and the owner sees them (`standings`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Q

from annotation.models import Example
from dynabench_site import access_cache
from dynabench_site.errors import Conflict
from tasks.models import Task
from validation.consensus import CORRECT, INCORRECT, outcome_key
from validation.models import GoldAnswer, GoldItem

GOLD_VERDICTS = {Example.Consensus.VERIFIED: CORRECT, Example.Consensus.REJECTED: INCORRECT}


@dataclass(frozen=True)
class Standing:
    """A validator's record on a task's gold items."""

    user_id: int
    username: str
    answered: int
    correct: int
    accuracy: float | None
    blocked: bool


def active_gold(example: Example) -> GoldItem | None:
    return GoldItem.objects.filter(example=example, active=True).first()


def mark(example: Example, by=None) -> GoldItem:
    """Use a decided example as gold, with its decision as the right answer (Conflict when it cannot be)."""
    task = example.round.task
    if example.consensus not in GOLD_VERDICTS:
        raise Conflict("only a verified or rejected example can be gold: its decision is the right answer")
    if example.retracted:
        raise Conflict("a retracted example cannot be gold")
    if task.typed_config.validation.scope == "fooling" and not example.fooled:
        raise Conflict("this task validates only fooling examples; a gold item that did not fool the model "
                       "would stand out in the queue")
    verdict = GOLD_VERDICTS[example.consensus]
    label = example.validated_label if verdict == INCORRECT else None
    gold, _ = GoldItem.objects.update_or_create(
        example=example, defaults={"task": task, "verdict": verdict, "label": label, "active": True, "created_by": by}
    )
    return gold


def unmark(example: Example) -> None:
    """Stop serving it; the answers already given keep counting towards accuracy."""
    GoldItem.objects.filter(example=example).update(active=False)


def is_right(gold: GoldItem, verdict: str, label: Any) -> bool:
    return outcome_key(verdict, label) == outcome_key(gold.verdict, gold.label)


def record_answer(user, gold: GoldItem, verdict: str, label: Any) -> GoldAnswer:
    """Keep a validator's answer on a gold item (IntegrityError if they answered it before)."""
    return GoldAnswer.objects.create(
        gold=gold, task_id=gold.task_id, validator=user, verdict=verdict, label=label,
        correct=is_right(gold, verdict, label),
    )


def _blocked(task: Task, answered: int, correct: int) -> bool:
    crowd = task.typed_config.crowd
    return answered >= crowd.gold_min_answers and correct / answered < crowd.gold_min_accuracy


def standing(task: Task, user) -> Standing:
    counts = GoldAnswer.objects.filter(task=task, validator=user).aggregate(
        answered=Count("pk"), correct=Count("pk", filter=Q(correct=True))
    )
    return _standing(task, user.pk, user.get_username(), counts["answered"], counts["correct"])


def _standing(task: Task, user_id: int, username: str, answered: int, correct: int) -> Standing:
    accuracy = round(correct / answered, 4) if answered else None
    return Standing(user_id, username, answered, correct, accuracy, _blocked(task, answered, correct))


def is_blocked(task: Task, user) -> bool:
    """Whether `user` is blocked on `task`. Every queue request and vote asks, so the gold counts come from the
    access cache when it holds them (issue 27); a gold answer's creation or deletion makes them stale
    (validation.signals), and the thresholds are read from the task each time."""
    name = access_cache.key("gold", task.pk, user.pk)
    counts, generation = access_cache.lookup(name)
    if counts is access_cache.MISSING:
        found = GoldAnswer.objects.filter(task=task, validator=user).aggregate(
            answered=Count("pk"), correct=Count("pk", filter=Q(correct=True))
        )
        counts = (found["answered"], found["correct"])
        access_cache.put(name, counts, generation)
    answered, correct = counts
    return bool(answered) and _blocked(task, answered, correct)


def standings(task: Task) -> list[Standing]:
    """Every validator who answered a gold item of the task, blocked ones first, then by accuracy."""
    rows = (
        GoldAnswer.objects.filter(task=task)
        .values("validator")
        .annotate(answered=Count("pk"), correct=Count("pk", filter=Q(correct=True)))
        .order_by()
    )
    names = dict(get_user_model().objects.filter(pk__in=[r["validator"] for r in rows]).values_list("pk", "username"))
    found = [_standing(task, r["validator"], names.get(r["validator"], "?"), r["answered"], r["correct"]) for r in rows]
    return sorted(found, key=lambda s: (not s.blocked, s.accuracy if s.accuracy is not None else 2, s.username))
