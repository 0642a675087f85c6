"""People who withdrew their consent from a task's study, and what that leaves out.

Their examples leave every NEW export (live files, bundles, new snapshots; `exports.splits` filters them out of
what can ever be exported, so the round pipeline no longer trains or evaluates on them either) and the arms
comparison (`rounds.arms`). Published snapshots are immutable files and are not rewritten. The dataset card says
how many examples of how many people were left out (`left_out`).

Who has withdrawn is the study's rule, read from there: `study.consent.withdrawn_user_ids` (a participant whose
withdrawal is recorded, on the participant row or on a consent record).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from study import consent
from tasks.models import Task


def withdrawn_user_ids(task: Task) -> set[int]:
    """The ids of the people who withdrew from `task`'s study (empty for a task without one)."""
    return set(consent.withdrawn_user_ids(task))


def without_withdrawn(examples: QuerySet, task: Task) -> QuerySet:
    """`examples` less those written by people who withdrew from `task`'s study (unchanged when nobody did)."""
    ids = withdrawn_user_ids(task)
    return examples.exclude(author_id__in=ids) if ids else examples


@dataclass(frozen=True)
class LeftOut:
    examples: int
    people: int


def left_out(examples: QuerySet, task: Task) -> LeftOut:
    """How many of `examples` (and of how many people) withdrawal leaves out."""
    ids = withdrawn_user_ids(task)
    if not ids:
        return LeftOut(0, 0)
    mine = examples.filter(author_id__in=ids)
    return LeftOut(mine.count(), mine.values("author_id").distinct().count())
