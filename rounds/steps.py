"""The pipeline's steps. Each is idempotent: run twice, it does its work once and reports the same outcome.

Each step is a thin call into the module that owns the work (exports for splits, the model zoo for
training and deployment, hardness for seeding), so wiring a module in is a one-line change here.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from rounds.models import PipelineRun, ResearcherModel
from rounds.pipeline import StepContext
from tasks.models import Round
from tasks.services import close_round


def next_round(ctx: StepContext) -> Round:
    """The round the run opens: created as a draft the first time a step needs it."""
    run = ctx.run
    if run.to_round_id is not None:
        return Round.objects.get(pk=run.to_round_id)
    number = (run.from_round.number + 1) if run.from_round else 1
    round_, _ = Round.objects.get_or_create(task=run.task, number=number, defaults={"status": Round.Status.DRAFT})
    PipelineRun.objects.filter(pk=run.pk).update(to_round=round_)
    run.to_round = round_
    return round_


def freeze(ctx: StepContext) -> dict[str, Any]:
    round_ = ctx.run.from_round
    if round_ is None:
        ctx.log("the task has no round yet: nothing to freeze")
        return {}
    round_.refresh_from_db()
    if round_.status == Round.Status.OPEN:
        close_round(round_)
        ctx.log(f"round {round_.number} closed: it takes no new examples")
    else:
        ctx.log(f"round {round_.number} was already {round_.status}")
    keeps = ctx.task.typed_config.validation.continue_after_close
    ctx.log("validation continues on its examples" if keeps else "validation of its examples stops")
    return {"round": round_.number}


def assign_splits(ctx: StepContext) -> dict[str, Any]:
    from exports.splits import assign_splits as assign
    from exports.splits import held_back

    counts: dict[str, Any] = {}
    for round_ in ctx.task.rounds.exclude(status=Round.Status.DRAFT).order_by("number"):
        assigned = assign(round_)
        counts[str(round_.number)] = {**assigned, "held_back": held_back(round_)}
        ctx.log(f"round {round_.number}: assigned {assigned}, {counts[str(round_.number)]['held_back']} held back")
    return {"rounds": counts}


def retrain(ctx: StepContext) -> dict[str, Any]:
    from rounds import training

    target = next_round(ctx)
    versions = training.train_ensemble(ctx, target.number)
    return {"versions": [v.pk for v in versions]}


def evaluate(ctx: StepContext) -> dict[str, Any]:
    from rounds import evaluation

    target = next_round(ctx)
    members = _members(ctx)
    return evaluation.evaluate_everything(ctx.task, {target.number: members}, ctx.log, ctx.progress)


def seed(ctx: StepContext) -> dict[str, Any]:
    from rounds import seeding

    target = next_round(ctx)
    k = ctx.options.k
    if k == 0:
        ctx.log("k = 0: no hardness seeding")
        return {"seeds": 0}
    chosen = seeding.seed_round(ctx.task, target, _members(ctx), k, ctx.options.pool_max, ctx.log)
    return {"seeds": chosen}


def deploy(ctx: StepContext) -> dict[str, Any]:
    from modelzoo.services import active_ensemble, deploy_ensemble

    target = next_round(ctx)
    members = _members(ctx)
    ids = [v.pk for v in members]
    current = active_ensemble(target)
    if current is not None and [v.pk for v in current.ordered_members()] == ids:
        ctx.log(f"round {target.number} already has this ensemble")
    else:
        ensemble = deploy_ensemble(target, members)
        ctx.log(f"deployed ensemble {ensemble.pk} ({len(ids)} models) for round {target.number}")
    ResearcherModel.objects.filter(model_version_id__in=ids, in_next_ensemble=True).update(in_next_ensemble=False)
    return {"ensemble": ids}


def open_round(ctx: StepContext) -> dict[str, Any]:
    target = next_round(ctx)
    with transaction.atomic():
        target = Round.objects.select_for_update().get(pk=target.pk)
        if target.status == Round.Status.DRAFT:
            target.status, target.opened_at = Round.Status.OPEN, timezone.now()
            target.save(update_fields=["status", "opened_at"])
            ctx.log(f"round {target.number} is open")
        else:
            ctx.log(f"round {target.number} was already {target.status}")
    return {"round": target.number}


def _members(ctx: StepContext) -> list:
    """The next round's ensemble: the models this run trained plus uploads the owner added."""
    from modelzoo.models import ModelVersion

    trained = ctx.result_of("retrain").get("versions", [])
    saved = ctx.result_of("deploy").get("members")
    if saved is None:
        added = list(
            ResearcherModel.objects.filter(task=ctx.task, in_next_ensemble=True, model_version__isnull=False)
            .exclude(model_version_id__in=trained).values_list("model_version_id", flat=True)
        )
        saved = [*trained, *added]
        _save_members(ctx, saved)
    by_id = ModelVersion.objects.in_bulk(saved)
    return [by_id[pk] for pk in saved if pk in by_id]


def _save_members(ctx: StepContext, ids: list[int]) -> None:
    """Fix the ensemble's members the first time they are needed, so evaluate, seed and deploy agree."""
    from rounds.models import PipelineStep

    step = PipelineStep.objects.get(run=ctx.run, name="deploy")
    PipelineStep.objects.filter(pk=step.pk).update(result={**step.result, "members": ids})
    if ctx.step.pk == step.pk:
        ctx.step.result = {**ctx.step.result, "members": ids}


STEPS = [
    ("freeze", "Freeze the round", freeze),
    ("assign_splits", "Assign dataset splits", assign_splits),
    ("retrain", "Retrain the target models", retrain),
    ("evaluate", "Evaluate every model on every test set", evaluate),
    ("seed", "Seed the next round (hardness)", seed),
    ("deploy", "Deploy the new ensemble", deploy),
    ("open", "Open the next round", open_round),
]
