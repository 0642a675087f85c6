"""Retraining between rounds: several seeds on the same data form the next round's ensemble (model zoo).

The data is `rounds.datasets.training_set`: the imported train items and exactly each round's exported train
split, so nothing that is (or may later be) in a dev or test split is trained on."""

from __future__ import annotations

from modelzoo.models import ModelVersion
from modelzoo.services import default_spec, train_model
from rounds import datasets
from rounds.context import StepContext


def train_ensemble(ctx: StepContext, round_number: int) -> list[ModelVersion]:
    """One model version per seed. `reuse` makes a retry register the artifact an earlier attempt finished."""
    task, opts = ctx.task, ctx.options
    labelled = datasets.training_set(task)
    ctx.log(f"training data: {len(labelled.inputs)} examples ({labelled.name}); seeds {opts.seeds}")
    versions: list[ModelVersion] = []
    for i, seed in enumerate(opts.seeds):
        spec = default_spec(task, seed=seed, epochs=opts.epochs, batch_size=opts.batch_size, encoder=opts.encoder)
        echo = _echo(ctx, i, len(opts.seeds), seed)
        version = train_model(task, spec, labelled, name=f"{task.slug}-r{round_number}-s{seed}", reuse=True, echo=echo)
        versions.append(version)
        ctx.save_result(versions=[v.pk for v in versions])
        ctx.log(f"seed {seed}: {version.name} (v{version.version}) {_loss(version)}")
    return versions


def _echo(ctx: StepContext, index: int, count: int, seed: int):
    last = [-1.0]

    def report(step: int, total: int, stats: dict[str, float]) -> None:
        fraction = (index + step / max(total, 1)) / count
        if fraction - last[0] >= 0.01 or step == total:  # at most ~100 writes per step
            last[0] = fraction
            ctx.progress(fraction, f"model {index + 1}/{count} (seed {seed}): step {step}/{total}, "
                                   f"loss {stats.get('loss', 0):.3f}")

    return report


def _loss(version: ModelVersion) -> str:
    loss = (version.metrics or {}).get("train_loss")
    return f"train loss {loss}" if loss is not None else "(reused)"
