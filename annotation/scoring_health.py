"""Scoring that needs an owner's eye: failed examples, and pending ones nothing touched for too long.

Shown on the console's health page (`{% load scoring_health %}`) and counted in `/healthz`; an owner asks for
them again with `annotation.views.scoring_retry` (POST).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from annotation.models import Example


def stuck_after_seconds() -> float:
    """A pending example is stuck when nothing touched it for this long: its job was lost and the sweep did not
    bring it back (no beat, no worker), or a worker keeps dying on it."""
    return 2 * float(settings.SCORING_STALE_SECONDS) + float(settings.SCORING_RETRY_MAX_SECONDS)


def stuck_filter() -> Q:
    old = timezone.now() - timedelta(seconds=stuck_after_seconds())
    return Q(scoring_state=Example.Scoring.PENDING, updated_at__lt=old)


def counts(examples: QuerySet[Example] | None = None) -> dict[str, int]:
    examples = Example.objects.all() if examples is None else examples
    pending = examples.filter(scoring_state=Example.Scoring.PENDING)
    return {
        "pending": pending.count(),
        "delayed": pending.filter(scoring_delayed=True).count(),
        "stuck": examples.filter(stuck_filter()).count(),
        "failed": examples.filter(scoring_state=Example.Scoring.FAILED).count(),
    }


def attention(task, limit: int = 50) -> list[Example]:
    """The task's failed and stuck examples, oldest first."""
    return list(
        Example.objects.filter(round__task=task)
        .filter(Q(scoring_state=Example.Scoring.FAILED) | stuck_filter())
        .select_related("round", "author").order_by("updated_at")[:limit]
    )


def task_summary(task) -> dict[str, Any]:
    return {**counts(Example.objects.filter(round__task=task)), "attention": attention(task)}


def stuck_scoring() -> tuple[dict[str, int], bool]:
    """`/healthz`'s scoring line (registered in `AnnotationConfig.ready`): the counts; stuck or failed ones need
    an owner."""
    found = counts()
    return found, bool(found["stuck"] or found["failed"])
