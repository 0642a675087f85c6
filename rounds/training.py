"""Retraining between rounds: several seeds on the same data form the next round's ensemble (model zoo).

The data is `rounds.datasets.training_plan`: the imported train items (never the held-out slice) and exactly
each round's exported train split, so nothing that is (or may later be) in a dev or test split is trained on;
the closing round's rows count `retraining.new_round_weight` times, and the early-stopping dev set is carved
per source (base data and each round) before the copies are made, so it holds old and new data and no copy
sits on both sides. The recipe is the model zoo's (`modelzoo.ensemble_training`, the same as the demo
models'): by default ``cached-top`` (frozen lower layers encoded once for every member, top block(s)
fine-tuned per seed, steps scaled to the data, early stopping on that dev set); option ``recipe: "full"`` is
the earlier recipe (every layer, `epochs` fixed passes, no dev set), kept for comparison. Either way each member
records its training dynamics, kept as the round's data maps (`rounds.datamaps`, dataset cartography).

Where it trains is settings.TRAINING_BACKEND (`modelzoo.trainers`): in this process (the default), or on a GPU
worker of the "training" queue. Then the step says what it waits for (queued, no worker serves the queue,
training on a host) in its message and log, its rows stay *training*, and a step that runs again (a retry, or a
takeover after this worker died) waits for the same job (kept in the step's result) instead of sending another."""

from __future__ import annotations

import time

from modelzoo import ensemble_training, trainers
from modelzoo.models import ModelVersion
from rounds import datamaps, datasets
from rounds.context import StepContext


def train_ensemble(ctx: StepContext, round_number: int) -> list[ModelVersion]:
    """One model version per seed. Reuse makes a retry register the artifacts an earlier attempt finished."""
    task, opts = ctx.task, ctx.options
    recipe = getattr(opts, "recipe", ensemble_training.CACHED_TOP)
    closing = ctx.run.from_round
    plan = datasets.training_plan(task, newest=closing.number if closing is not None else None,
                                  with_dev=recipe == ensemble_training.CACHED_TOP)
    labelled = plan.train
    for line in plan.describe():
        ctx.log(line)
    ctx.log(f"training {len(opts.seeds)} models ({labelled.name}); seeds {opts.seeds}; recipe {recipe}")
    ctx.save_result(data=plan.summary())
    versions = trainers.train_ensemble(
        task, labelled, opts.seeds, names=[f"{task.slug}-r{round_number}-s{seed}" for seed in opts.seeds],
        recipe=recipe, spec=ensemble_training.default_recipe(task, encoder=opts.encoder),
        full_overrides={"epochs": opts.epochs, "batch_size": opts.batch_size, "encoder": opts.encoder},
        dev=plan.dev, echo=_echo(ctx), reuse=True, start_from=getattr(opts, "start_from", None),
        notice=_notice(ctx), resume=ctx.step.result.get("training_job"),
        on_job=lambda job: ctx.save_result(training_job=job),
    )
    ctx.save_result(versions=[v.pk for v in versions])
    for version in versions:
        ctx.log(f"{version.name} (v{version.version}) {_summary(version)}")
    record_data_maps(ctx, round_number, versions)
    return versions


def record_data_maps(ctx: StepContext, round_number: int, versions: list[ModelVersion]) -> None:
    """Each member's training dynamics as the round's data maps (`rounds.datamaps`). A map that cannot be stored
    is logged, never a failed retraining: the models are what the round needs."""
    try:
        round_ = ctx.task.rounds.get(number=round_number)
        maps = datamaps.store(round_, versions, ctx.log)
    except Exception as exc:  # noqa: BLE001 - the data map is a by-product of training, not a step of its own
        ctx.log(f"data maps not stored: {type(exc).__name__}: {exc}")
        return
    ctx.save_result(data_maps=[m.pk for m in maps])


def _echo(ctx: StepContext):
    last = [-1.0]

    def report(done: int, total: int, stats: dict[str, float]) -> None:
        fraction = done / max(total, 1)
        if fraction - last[0] >= 0.01 or done >= total:  # at most ~100 writes per step
            last[0] = fraction
            member = stats.get("member")
            what = f"model {int(member) + 1}" if member is not None else "encoding the data"
            ctx.progress(fraction, f"{what}: {done}/{total}, loss {stats.get('loss', 0):.3f}")

    return report


def _notice(ctx: StepContext, relog_s: float = 300.0):
    """A trainer's words (queued, waiting for a worker, training on a host) in the step's message, and in its log
    when they change (or every few minutes while they do not): a step that waits says so, and its run stays alive."""
    last = ["", 0.0]

    def say(message: str) -> None:
        ctx.progress(ctx.step.progress, message)
        head, now = message.split(" (")[0], time.monotonic()
        if head != last[0] or now - last[1] >= relog_s:
            last[0], last[1] = head, now
            ctx.log(message)

    return say


def _summary(version: ModelVersion) -> str:
    m = version.metrics or {}
    if "train_loss" not in m:
        return "(reused)"
    parts = [f"train loss {m['train_loss']}"]
    if m.get("dev_loss") is not None:
        parts.append(f"dev loss {m['dev_loss']:.4f}")
    if "steps" in m:
        parts.append(f"{m['steps']} steps{' (stopped early)' if m.get('stopped_early') else ''}")
    return ", ".join(parts)
