"""Figures derived from the rows (queries, never counters): rates per round, task and annotator,
and validator agreement (Krippendorff's alpha per round; each validator's agreement with consensus)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from itertools import permutations
from typing import Any

from django.db.models import QuerySet

from annotation.managers import rate
from annotation.models import Example
from tasks import badges
from tasks.models import Task
from validation.consensus import FLAGGED, REJECTED, VERIFIED, outcome_key
from validation.models import Validation

C = Example.Consensus


def figures(examples: QuerySet[Example]) -> dict[str, Any]:
    """MER, vMER, rejection and flag rates of a set of examples (retracted ones do not count)."""
    return examples.figures()


def annotators(examples: QuerySet[Example]) -> list[dict[str, Any]]:
    """Per writer: the same figures, ranked as a leaderboard (verified fooled, then vMER, then MER)."""
    return examples.leaderboard()


def krippendorff_alpha(units: Iterable[Sequence[Hashable]]) -> float | None:
    """Krippendorff's alpha for nominal data; each unit is the list of values its raters gave.

    Units with fewer than two values carry no information about agreement and are left out.
    None when there is nothing to compare or no variation at all (alpha is undefined then).
    """
    coincidences: Counter[tuple[Hashable, Hashable]] = Counter()
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for a, b in permutations(values, 2):
            coincidences[(a, b)] += 1 / (m - 1)
    totals: Counter[Hashable] = Counter()
    for (a, _), weight in coincidences.items():
        totals[a] += weight
    n = sum(totals.values())
    expected = n * n - sum(v * v for v in totals.values())  # sum over c != k of n_c * n_k
    if n <= 1 or expected <= 0:
        return None
    observed = sum(w for (a, b), w in coincidences.items() if a != b)
    return round(1 - (n - 1) * observed / expected, 4)


def crowd_votes(examples: QuerySet[Example]) -> QuerySet[Validation]:
    return Validation.objects.filter(example__in=examples, mode=Validation.Mode.CROWD, counted=True)


def agreement(examples: QuerySet[Example]) -> dict[str, Any]:
    """Krippendorff's alpha over the crowd votes on these examples (outcomes as nominal values)."""
    units: dict[int, list[str]] = defaultdict(list)
    for example_id, verdict, label in crowd_votes(examples).values_list("example_id", "verdict", "label"):
        units[example_id].append(outcome_key(verdict, label))
    rated = [u for u in units.values() if len(u) >= 2]
    return {"alpha": krippendorff_alpha(rated), "units": len(rated), "votes": sum(len(u) for u in rated)}


def final_key(state: str, label: Any) -> str | None:
    if state == VERIFIED:
        return "correct"
    if state == REJECTED:
        return outcome_key("incorrect", label)
    return FLAGGED if state == FLAGGED else None


def validators(examples: QuerySet[Example]) -> list[dict[str, Any]]:
    """Each validator's crowd votes and how often they matched the final consensus (decided examples)."""
    tally: dict[str, Counter[str]] = defaultdict(Counter)
    rows = crowd_votes(examples).values_list(
        "validator__username", "verdict", "label", "example__consensus", "example__validated_label"
    )
    for username, verdict, label, state, final_label in rows:
        tally[username]["votes"] += 1
        final = final_key(state, final_label)
        if final is not None:
            tally[username]["decided"] += 1
            tally[username]["agreed"] += outcome_key(verdict, label) == final
    board = [
        {"username": name, "votes": t["votes"], "decided": t["decided"], "agreed": t["agreed"],
         "agreement": rate(t["agreed"], t["decided"])}
        for name, t in tally.items()
    ]
    return sorted(board, key=lambda r: (-r["votes"], r["username"]))


def task_stats(task: Task) -> dict[str, Any]:
    """Everything the stats API and the task page show: per task, per round, per annotator, per validator."""
    examples = Example.objects.filter(round__task=task)
    rounds = [
        {"round": r.number, "status": r.status, **figures(examples.filter(round=r)),
         "agreement": agreement(examples.filter(round=r))}
        for r in task.rounds.order_by("number")
    ]
    return {
        "task": task.slug,
        "overall": {**figures(examples), "agreement": agreement(examples)},
        "rounds": rounds,
        "annotators": badges.add_to(annotators(examples), task),
        "validators": validators(examples),
    }
