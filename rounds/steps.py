"""The pipeline's steps. Each is idempotent: run twice, it does its work once and reports the same outcome.

Each step is a thin call into the module that owns the work (exports for splits, the model zoo for
training and deployment, hardness for seeding, `tasks.rounds` for round transitions), so wiring a module in
is a one-line change here.
"""

from __future__ import annotations

from typing import Any

from exports import splits
from modelzoo.models import ModelVersion
from modelzoo.services import active_ensemble, deploy_ensemble
from rounds import evaluation, seeding, training
from rounds.context import StepContext
from rounds.models import PipelineRun, ResearcherModel
from tasks import rounds
from tasks.models import Round


def next_round(ctx: StepContext) -> Round:
    """The round the run opens: created as a draft the first time a step needs it."""
    run = ctx.run
    if run.to_round_id is not None:
        return Round.objects.get(pk=run.to_round_id)
    number = (run.from_round.number + 1) if run.from_round else 1
    round_ = rounds.draft_round(run.task, number)
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
        rounds.close_round(round_)
        ctx.log(f"round {round_.number} closed: it takes no new examples")
    else:
        ctx.log(f"round {round_.number} was already {round_.status}")
    keeps = ctx.task.typed_config.validation.continue_after_close
    ctx.log("validation continues on its examples" if keeps else "validation of its examples stops")
    return {"round": round_.number}


def assign_splits(ctx: StepContext) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    for round_ in splits.rounds_with_data(ctx.task):
        assigned = splits.assign_splits(round_)
        counts[str(round_.number)] = {**assigned, "held_back": splits.held_back(round_)}
        ctx.log(f"round {round_.number}: assigned {assigned}, {counts[str(round_.number)]['held_back']} held back")
    return {"rounds": counts}


def retrain(ctx: StepContext) -> dict[str, Any]:
    target = next_round(ctx)
    versions = training.train_ensemble(ctx, target.number)
    return {"versions": [v.pk for v in versions]}


def evaluate(ctx: StepContext) -> dict[str, Any]:
    target = next_round(ctx)
    members = _members(ctx)
    return evaluation.evaluate_everything(ctx.task, {target.number: members}, ctx.log, ctx.progress)


def seed(ctx: StepContext) -> dict[str, Any]:
    target = next_round(ctx)
    k = ctx.options.k
    if k == 0:
        ctx.log("k = 0: no hardness seeding")
        return {"seeds": 0}
    chosen = seeding.seed_round(ctx.task, target, _members(ctx), k, ctx.options.pool_max, ctx.log)
    return {"seeds": chosen}


def deploy(ctx: StepContext) -> dict[str, Any]:
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
    target.refresh_from_db()
    if target.status == Round.Status.DRAFT:
        rounds.open_round(target)
        ctx.log(f"round {target.number} is open")
    else:
        ctx.log(f"round {target.number} was already {target.status}")
    return {"round": target.number}


def _members(ctx: StepContext) -> list[ModelVersion]:
    """The next round's ensemble: the models this run trained plus uploads the owner added. Fixed on the run
    the first time a step needs them, so evaluate, seed and deploy agree, and a retry uses the same ones."""
    run = ctx.run
    if run.members is None:
        trained = ctx.result_of("retrain").get("versions", [])
        added = list(
            ResearcherModel.objects.filter(task=ctx.task, in_next_ensemble=True, model_version__isnull=False)
            .exclude(model_version_id__in=trained).values_list("model_version_id", flat=True)
        )
        PipelineRun.objects.filter(pk=run.pk, members__isnull=True).update(members=[*trained, *added])
        run.refresh_from_db(fields=["members"])
    by_id = ModelVersion.objects.in_bulk(run.members)
    return [by_id[pk] for pk in run.members if pk in by_id]


STEPS = [
    ("freeze", "Freeze the round", freeze),
    ("assign_splits", "Assign dataset splits", assign_splits),
    ("retrain", "Retrain the target models", retrain),
    ("evaluate", "Evaluate every model on every test set", evaluate),
    ("seed", "Seed the next round (hardness)", seed),
    ("deploy", "Deploy the new ensemble", deploy),
    ("open", "Open the next round", open_round),
]
