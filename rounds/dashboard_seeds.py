"""The round dashboard's seeding section: the seeds' hardness scores next to the rest of the pool's, and how
often the live ensemble is fooled on seeded contexts versus the others (examples written on them).

Seeds are the round's hardness-seeded pool items (`LabeledItem.seed_round`) and contexts (`Context.is_seed`);
an example counts for "seeded contexts" when the context it was written on was seeded (for any round), and for
"other contexts" otherwise (another context, or none). Only scored, not retracted examples count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotation.managers import rate
from annotation.models import Example
from rounds.charts import Series, bar_chart
from tasks.models import Context, LabeledItem, Round

BINS = 8


def histogram(seeds: list[float], rest: list[float], bins: int = BINS) -> dict[str, Any]:
    """Counts of both lists over the same equal-width bins spanning them all."""
    values = [*seeds, *rest]
    if not values:
        return {"edges": [], "seeds": [], "rest": []}
    lo, hi = min(values), max(values)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    return {"edges": [round(float(e), 4) for e in edges],
            "seeds": np.histogram(seeds, edges)[0].tolist(), "rest": np.histogram(rest, edges)[0].tolist()}


def seed_figures(round_: Round) -> dict[str, Any] | None:
    """The section's figures; None for a round that was not seeded (round 1 of a task opened by hand)."""
    task = round_.task
    seed_scores = list(LabeledItem.objects.filter(seed_round=round_, hardness_score__isnull=False)
                       .values_list("hardness_score", flat=True))
    contexts_seeded = Context.objects.filter(round=round_, is_seed=True).count()
    if not seed_scores and not contexts_seeded:
        return None
    rest = list(LabeledItem.objects.filter(task=task, split=LabeledItem.Split.TRAIN, seed_round__isnull=True,
                                           hardness_score__isnull=False).values_list("hardness_score", flat=True))
    examples = Example.objects.collected().filter(round=round_, fooled__isnull=False)
    fooling = {}
    for name, rows in (("seeded", examples.filter(context__is_seed=True)),
                       ("other", examples.exclude(context__is_seed=True))):
        n, fooled = rows.count(), rows.filter(fooled=True).count()
        fooling[name] = {"examples": n, "fooled": fooled, "rate": rate(fooled, n)}
    return {
        "round": round_.number,
        "score": task.typed_config.seeding.score,
        "items_seeded": len(seed_scores),
        "contexts_seeded": contexts_seeded,
        "pool_scored": len(seed_scores) + len(rest),
        "histogram": histogram(seed_scores, rest),
        "fooling": fooling,
    }


def seed_charts(seeds: dict[str, Any] | None) -> dict[str, Any]:
    if not seeds:
        return {}
    hist, fooling = seeds["histogram"], seeds["fooling"]
    edges = hist["edges"]
    bins = [f"{edges[i]:.2g}–{edges[i + 1]:.2g}" for i in range(len(edges) - 1)]
    return {
        "seed_scores": bar_chart(f"Hardness ({seeds['score']}) of round {seeds['round']}'s seeds and the rest of the pool",
                                 bins, [Series("seeds", hist["seeds"]), Series("rest of the pool", hist["rest"])],
                                 percent=False, y_title="pool items"),
        "seed_fooling": bar_chart(f"Fooling rate of the live ensemble, round {seeds['round']}",
                                  ["seeded contexts", "other contexts"],
                                  [Series("fooling rate", [fooling["seeded"]["rate"], fooling["other"]["rate"]])]),
    }
