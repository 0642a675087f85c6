"""Validator agreement from Validation rows: Fleiss' kappa over examples with at least two votes.

Examples may have different numbers of votes, so the per-example agreement uses each example's own
count (the usual generalisation of Fleiss' kappa to unequal numbers of raters).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count

from tasks.models import Round
from validation.models import Validation


@dataclass(frozen=True)
class Agreement:
    kappa: float | None
    observed: float | None  # mean pairwise agreement among the items
    items: int  # examples with >= 2 votes
    votes: int


def fleiss_kappa(items: Iterable[dict[str, int]]) -> Agreement:
    """`items`: per example, votes per category. Examples with fewer than two votes are skipped."""
    totals: Counter[str] = Counter()
    n_items, n_votes, agreement_sum = 0, 0, 0.0
    for counts in items:
        n = sum(counts.values())
        if n < 2:
            continue
        n_items += 1
        n_votes += n
        totals.update(counts)
        agreement_sum += (sum(c * c for c in counts.values()) - n) / (n * (n - 1))
    if not n_items:
        return Agreement(None, None, 0, 0)
    observed = agreement_sum / n_items
    expected = sum((c / n_votes) ** 2 for c in totals.values())
    kappa = 1.0 if expected >= 1.0 else (observed - expected) / (1 - expected)
    return Agreement(round(kappa, 4), round(observed, 4), n_items, n_votes)


def _per_example(round: Round) -> Iterable[dict[str, int]]:
    rows = (
        Validation.objects.filter(example__round=round, counted=True)
        .order_by("example_id")
        .values_list("example_id", "verdict")
        .annotate(n=Count("id"))
        .iterator(chunk_size=5000)
    )
    current, counts = None, {}
    for example_id, verdict, n in rows:
        if example_id != current and counts:
            yield counts
            counts = {}
        current = example_id
        counts[verdict] = n
    if counts:
        yield counts


def round_agreement(round: Round) -> Agreement:
    return fleiss_kappa(_per_example(round))
