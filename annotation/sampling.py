"""Context sampling strategies: a small registry keyed by the task setting `sampling`.

Each strategy orders a queryset of candidate contexts and returns one; the caller counts the use.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from django.db.models import F, QuerySet

from tasks.models import Context

Strategy = Callable[[QuerySet[Context]], Context | None]


def least_used(candidates: QuerySet[Context]) -> Context | None:
    return candidates.order_by("times_used", "id").first()


def hardness_first(candidates: QuerySet[Context]) -> Context | None:
    """Among the least-used contexts, the hardness-seeded ones first, hardest first."""
    return candidates.order_by(
        "times_used", F("is_seed").desc(), F("hardness_score").desc(nulls_last=True), "id"
    ).first()


def uniform(candidates: QuerySet[Context]) -> Context | None:
    count = candidates.count()
    if not count:
        return None
    return candidates.order_by("id")[random.randrange(count)]


STRATEGIES: dict[str, Strategy] = {
    "least_used": least_used,
    "hardness_first": hardness_first,
    "uniform": uniform,
}


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown sampling strategy {name!r}; known: {', '.join(STRATEGIES)}") from None
