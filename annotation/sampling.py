"""Context sampling strategies: a small registry keyed by the task setting `sampling`.

Each strategy orders a queryset of candidate contexts and returns one; the caller counts the use. The names are
written once in `tasks.choices` (the task settings, below this app, accept them): the registry holds exactly
those, checked when this module loads.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from django.db.models import F, QuerySet

from tasks import choices
from tasks.models import Context
from zoo.registry import Registry

Strategy = Callable[[QuerySet[Context]], Context | None]
STRATEGIES: Registry[Strategy] = Registry("sampling strategy")


@STRATEGIES.register(choices.LEAST_USED)
def least_used(candidates: QuerySet[Context]) -> Context | None:
    return candidates.order_by("times_used", "id").first()


@STRATEGIES.register(choices.HARDNESS_FIRST)
def hardness_first(candidates: QuerySet[Context]) -> Context | None:
    """Among the least-used contexts, the hardness-seeded ones first, hardest first."""
    return candidates.order_by(
        "times_used", F("is_seed").desc(), F("hardness_score").desc(nulls_last=True), "id"
    ).first()


@STRATEGIES.register(choices.UNIFORM)
def uniform(candidates: QuerySet[Context]) -> Context | None:
    count = candidates.count()
    if not count:
        return None
    return candidates.order_by("id")[random.randrange(count)]


STRATEGIES.require(choices.SAMPLING, exactly=True)


def get_strategy(name: str) -> Strategy:
    return STRATEGIES.lookup(name)
