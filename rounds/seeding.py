"""Seed the next round with the pool items the new ensemble finds hardest (k per label).

The hardness module owns the scores and the selection; this module hands it the new ensemble as a scorer
(`labels` + `predict_proba`, the protocol of `hardness.scorers`). Until `hardness.services.seed_round`
exists, a minimal fallback scores by loss under the ensemble and selects with `hardness.selection`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from modelzoo.models import ModelVersion
from modelzoo.services import predict_with
from tasks.models import LabeledItem, Round, Task

Log = Callable[[str], None]


class EnsembleScorer:
    """The new ensemble as a hardness scorer: mean class probabilities over its members."""

    def __init__(self, versions: Sequence[ModelVersion], labels: Sequence[str]):
        self.versions, self.labels = list(versions), list(labels)

    def predict_proba(self, inputs: Sequence[Mapping[str, str]]) -> np.ndarray:
        predictions = predict_with(self.versions, [dict(i) for i in inputs])
        return np.array([[p["probs"].get(label, 0.0) for label in self.labels] for p in predictions], dtype=np.float64)


def seed_round(task: Task, round_: Round, versions: Sequence[ModelVersion], k: int, pool_max: int, log: Log) -> int:
    if task.kind_impl.head != "classification":
        log("hardness seeding needs class probabilities; this task's kind has none, so no seeds")
        return 0
    already = LabeledItem.objects.filter(task=task, seed_round=round_).count()
    if already:
        log(f"round {round_.number} already has {already} seeds")
        return already
    scorer = EnsembleScorer(versions, task.settings.labels)
    try:
        from hardness.services import seed_round as hardness_seed_round
    except ImportError:
        return _seed_by_loss(task, round_, scorer, k, pool_max, log)
    chosen = hardness_seed_round(task, round_, k, score="loss", scorer=scorer)
    return chosen if isinstance(chosen, int) else len(chosen)


def pool(task: Task, pool_max: int) -> list[LabeledItem]:
    """Unseeded training items; a stable sample (by content key) when the pool is larger than `pool_max`."""
    rows = LabeledItem.objects.filter(task=task, split=LabeledItem.Split.TRAIN, seed_round__isnull=True)
    return list(rows.order_by("key")[:pool_max])


def _seed_by_loss(task: Task, round_: Round, scorer: EnsembleScorer, k: int, pool_max: int, log: Log) -> int:
    from hardness.selection import select

    items = pool(task, pool_max)
    if not items:
        log("the pool is empty: no seeds")
        return 0
    kind, config = task.kind_impl, task.settings
    probs = scorer.predict_proba([kind.model_input(config, i.context or {}, i.input) for i in items])
    index = {label: n for n, label in enumerate(scorer.labels)}
    gold = np.array([index[kind.target_label(i.target)] for i in items])
    loss = -np.log(np.clip(probs[np.arange(len(items)), gold], 1e-12, 1.0))
    chosen = select("hardest", loss, gold, k)
    for position in chosen.tolist():
        LabeledItem.objects.filter(pk=items[position].pk).update(seed_round=round_, hardness_score=float(loss[position]))
    log(f"scored {len(items)} pool items by loss under the new ensemble; {len(chosen)} seeds ({k} per label)")
    return len(chosen)
