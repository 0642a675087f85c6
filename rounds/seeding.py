"""Seed the next round with the pool items the new ensemble finds hardest (k per label).

The hardness module owns the scores, the selection and what is marked (`hardness.services.seed_round`);
this module hands it the new ensemble as a scorer (`labels` + `predict_proba`, the protocol of
`hardness.scorers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from modelzoo.heads import get_head
from modelzoo.models import ModelVersion
from modelzoo.services import predict_with
from tasks.models import Round, Task

Log = Callable[[str], None]


class EnsembleScorer:
    """The new ensemble as a hardness scorer: mean class probabilities over its members."""

    def __init__(self, versions: Sequence[ModelVersion], labels: Sequence[str]):
        self.versions, self.labels = list(versions), list(labels)

    def predict_proba(self, inputs: Sequence[Mapping[str, str]]) -> np.ndarray:
        predictions = predict_with(self.versions, [dict(i) for i in inputs])
        return np.array([[p["probs"].get(label, 0.0) for label in self.labels] for p in predictions], dtype=np.float64)


def seed_round(task: Task, round_: Round, versions: Sequence[ModelVersion], k: int, pool_max: int, log: Log) -> int:
    """Mark the k hardest pool items (and contexts) per label under the new ensemble as the round's seeds."""
    # Imported here, not at the top: hardness brings scipy (~500 modules, ~0.8 s), and the web process, which
    # imports the pipeline to create and show runs, never seeds a round.
    from hardness.services import seed_round as hardness_seed_round

    if not get_head(task.kind_impl.head).probabilities:
        log("hardness seeding needs class probabilities; this task's kind has none, so no seeds")
        return 0
    scorer = EnsembleScorer(versions, task.typed_config.labels)
    result = hardness_seed_round(task, round_, k, score="loss", scorer=scorer)
    log(f"scored {result.items_scored} pool items and {result.contexts_scored} contexts under the new ensemble; "
        f"seeded {result.items_seeded} items and {result.contexts_seeded} contexts ({k} per label); "
        f"share of seeds the ensemble gets wrong: {result.seeds_misclassified:.2f}")
    return result.items_seeded
