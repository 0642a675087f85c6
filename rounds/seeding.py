"""Seed the next round as Hard-Bench does: a weak model trained on the candidate pool scores it, and the k
hardest per label become the round's seeds (docs/seeding.md).

The task's settings say how (`typed_config.seeding`: score, k per label, pool_max, min_steps, seed; editable in
the console's settings form). The hardness module owns the weak scorer, the scores, the selection and what is
marked (`hardness.services.seed_round`). The new ensemble is *not* the scorer: Hard-Bench's seeds are hard for
a weak model trained one epoch on the pool, which the new ensemble is not (it was trained on earlier rounds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from modelzoo.models import ModelVersion
from tasks.models import Round, Task

Log = Callable[[str], None]


def seed_round(task: Task, round_: Round, versions: Sequence[ModelVersion], k: int | None, pool_max: int | None,
               log: Log) -> int:
    """Mark the k hardest pool items (and contexts) per label as the round's seeds; returns the items seeded.

    `k` and `pool_max` override the task's settings when given (pipeline options); None keeps the task's.
    `versions` (the new ensemble) are not used for scoring (see the module's docstring)."""
    # Imported here, not at the top: hardness brings scipy (~500 modules, ~0.8 s), and the web process, which
    # imports the pipeline to create and show runs, never seeds a round.
    from hardness.services import seed_round as hardness_seed_round
    from rounds.options import pipeline_options

    conf = task.typed_config.seeding
    k = conf.k_per_label if k is None else k
    pool_max = conf.pool_max if pool_max is None else pool_max
    if k == 0:
        log("k per label is 0: no hardness seeding")
        return 0
    per = "in all" if task.kind_impl.answer_is_span else "per label"
    # The weak scorer's encoder follows the pipeline's encoder setting (settings.ROUNDS_PIPELINE; "tiny" in tests).
    result = hardness_seed_round(task, round_, k, conf.score, pool_max=pool_max,
                                 encoder_name=pipeline_options().encoder)
    if result.training is not None:
        log(f"weak scorer (frozen encoder + linear head) {result.training.describe()}")
    log(f"scored {result.items_scored} of {result.pool_size} pool items (pool_max {pool_max}) by {result.score} "
        f"and {result.contexts_scored} contexts; seeded {result.items_seeded} items and "
        f"{result.contexts_seeded} contexts ({k} {per}); share of seeds the weak scorer gets wrong: "
        f"{result.seeds_misclassified:.2f}")
    return result.items_seeded
