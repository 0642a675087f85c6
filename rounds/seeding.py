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


RUN_OPTIONS = object()  # `encoder` not given: the encoder stored with the pipeline run that opens the round


def run_encoder(round_: Round) -> str | None:
    """The encoder option stored with the pipeline run that opens `round_` (its options are fixed when it starts,
    so a retry, or a site whose ROUNDS_PIPELINE changed since, seeds with the same encoder). Without such a run (a
    direct call), the site's pipeline option."""
    from rounds.models import PipelineRun
    from rounds.options import PipelineOptions, pipeline_options

    run = (PipelineRun.objects.filter(to_round=round_).exclude(status=PipelineRun.Status.ABANDONED)
           .order_by("-created_at", "-pk").first())
    if run is None:
        return pipeline_options().encoder
    return PipelineOptions.model_validate(run.options).encoder


def seed_round(task: Task, round_: Round, versions: Sequence[ModelVersion], k: int | None, pool_max: int | None,
               log: Log, encoder: str | None | object = RUN_OPTIONS) -> int:
    """Mark the k hardest pool items (and contexts) per label as the round's seeds; returns the items seeded.

    `k` and `pool_max` override the task's settings when given (pipeline options); None keeps the task's.
    `encoder`: the weak scorer's encoder (a name or folder, `zoo.encoders`; None: the default MiniLM); left out,
    the one stored with the run's options (`run_encoder`), never the site's current setting.
    `versions` (the new ensemble) are not used for scoring (see the module's docstring)."""
    # Imported here, not at the top: hardness brings scipy (~500 modules, ~0.8 s), and the web process, which
    # imports the pipeline to create and show runs, never seeds a round.
    from hardness.services import seed_round as hardness_seed_round
    from hardness.services import site_encoder
    from zoo.encoders import DEFAULT

    conf = task.typed_config.seeding
    k = conf.k_per_label if k is None else k
    pool_max = conf.pool_max if pool_max is None else pool_max
    if k == 0:
        log("k per label is 0: no hardness seeding")
        return 0
    per = "in all" if task.kind_impl.answer_is_span else "per label"
    chosen = run_encoder(round_) if encoder is RUN_OPTIONS else encoder
    name = site_encoder(chosen, task)  # None: the task's encoder, else the site's (modelzoo.encoders)
    result = hardness_seed_round(task, round_, k, conf.score, pool_max=pool_max, encoder_name=name)
    if result.training is not None:
        log(f"weak scorer (frozen encoder {chosen or name or DEFAULT} + linear head) {result.training.describe()}")
    log(f"scored {result.items_scored} of {result.pool_size} pool items (pool_max {pool_max}) by {result.score} "
        f"and {result.contexts_scored} contexts; seeded {result.items_seeded} items and "
        f"{result.contexts_seeded} contexts ({k} {per}); share of seeds the weak scorer gets wrong: "
        f"{result.seeds_misclassified:.2f}")
    return result.items_seeded
