"""The pipeline's steps. Each is idempotent: run twice, it does its work once and reports the same outcome.

Each step is a thin call into the module that owns the work (exports for splits, the model zoo for
training and deployment, hardness for seeding, `tasks.round_state` for round transitions), so wiring a module in
is a one-line change here.
"""

from __future__ import annotations

from typing import Any

from exports import splits
from modelzoo.models import ModelVersion
from modelzoo.services import active_ensemble, active_members, deploy_ensemble
from rounds import datasets, evaluation, seeding, training
from rounds.context import StepContext
from rounds.models import PipelineRun, ResearcherModel
from tasks import round_state
from tasks.models import LabeledItem, Round


class AwaitingApproval(Exception):
    """The new ensemble is worse than the live one beyond the task's tolerance: the run waits for its owner."""


def next_round(ctx: StepContext) -> Round:
    """The round the run opens: created as a draft the first time a step needs it."""
    run = ctx.run
    if run.to_round_id is not None:
        return Round.objects.get(pk=run.to_round_id)
    number = (run.from_round.number + 1) if run.from_round else 1
    round_ = round_state.draft_round(run.task, number)
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
        round_state.close_round(round_)
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


def generative(ctx: StepContext) -> bool:
    """A generative kind (chat) has no encoder head: its models are the task's language model targets, which a round
    neither retrains, evaluates, seeds nor deploys. Closing its round freezes it and opens the next, nothing else."""
    return ctx.task.kind_impl.generative


GENERATIVE_NOTE = ("a {kind} task's models are language models (its targets in the task's settings), not an encoder "
                   "ensemble: nothing is {what}; change the targets in the task's settings to change what answers")


def skip_generative(ctx: StepContext, what: str) -> dict[str, Any] | None:
    if not generative(ctx):
        return None
    ctx.log(GENERATIVE_NOTE.format(kind=ctx.task.kind, what=what))
    return {"skipped": "generative"}


def live_members(ctx: StepContext) -> list[ModelVersion]:
    """The ensemble in the loop of the closing round (none before the first round)."""
    return active_members(ctx.run.from_round)


def new_training_rows(ctx: StepContext, live: list[ModelVersion]) -> int:
    """Training data the live ensemble has not seen: the closing round's train split, plus training items
    imported since the live ensemble's first member was trained."""
    source = ctx.run.from_round
    rows = splits.in_split(source, "train").count() if source is not None else 0
    since = min(v.created_at for v in live)
    return rows + LabeledItem.objects.filter(task=ctx.task, split=LabeledItem.Split.TRAIN, created_at__gt=since).count()


def wants_retraining(ctx: StepContext) -> bool:
    asked = ctx.options.retrain_without_new_data
    return ctx.task.typed_config.retraining.retrain_without_new_data if asked is None else asked


def retrain(ctx: StepContext) -> dict[str, Any]:
    target = next_round(ctx)
    if (skipped := skip_generative(ctx, f"retrained: round {target.number} keeps the same targets")) is not None:
        return {**skipped, "versions": []}
    live = live_members(ctx)
    if live and not wants_retraining(ctx) and (new := new_training_rows(ctx, live)) == 0:
        ctx.log(f"no new training data: round {ctx.run.from_round.number} has no example in its train split and no "
                f"training item was imported since the live ensemble was trained, so round {target.number} keeps the "
                f"live ensemble ({', '.join(v.name for v in live)}) and nothing is retrained. To retrain anyway, tick "
                f"“retrain without new data” when closing the round (or set retraining.retrain_without_new_data).")
        return {"versions": [], "kept_live": [v.pk for v in live], "new_rows": 0}
    if live and not wants_retraining(ctx):
        ctx.log(f"{new} new training rows since the live ensemble was trained")
    versions = training.train_ensemble(ctx, target.number)
    return {"versions": [v.pk for v in versions]}


def evaluate(ctx: StepContext) -> dict[str, Any]:
    if (skipped := skip_generative(ctx, "evaluated on test sets (the arena ranks the targets)")) is not None:
        return skipped
    target = next_round(ctx)
    members = _members(ctx)
    return evaluation.evaluate_everything(ctx.task, {target.number: members}, ctx.log, ctx.progress)


def tolerance(ctx: StepContext) -> float:
    return float(ctx.task.typed_config.retraining.deploy_tolerance)


def compare(ctx: StepContext) -> dict[str, Any]:
    """Before deploying: the new ensemble against the live one on every test set. Worse by more than the task's
    tolerance on any set of at least `datasets.MIN_TEST_SIZE` rows, the run stops at "awaiting approval" until
    an owner approves (deploy it) or discards it (the next round keeps the live ensemble). A smaller set is shown
    in the comparison, flagged, and decides nothing."""
    if (skipped := skip_generative(ctx, "compared")) is not None:
        return skipped
    run, target = ctx.run, next_round(ctx)
    live, members = live_members(ctx), _members(ctx)
    if not live:
        ctx.log("no live ensemble (the task's first round): nothing to compare with")
        return {"verdict": "no_live"}
    if [v.pk for v in live] == [v.pk for v in members]:
        ctx.log("the next round keeps the live ensemble: nothing to compare")
        return {"verdict": "same"}
    limit = tolerance(ctx)
    table = evaluation.compare_ensembles(ctx.task, (run.from_round.number, live), (target.number, members), ctx.log)
    # A set smaller than datasets.MIN_TEST_SIZE is shown but never stops a deploy: its figures move by more than
    # the tolerance from one example to the next (issue 23: a 30-item set stopped three retrainings that the 202-
    # and 451-row held-out slices passed).
    worse = [r["label"] for r in table["rows"] if r["delta"] is not None and r["delta"] < -limit and not r["small"]]
    small = [r["label"] for r in table["rows"] if r["small"]]
    table.update(tolerance=limit, worse=worse, small=small, min_size=datasets.MIN_TEST_SIZE)
    for row in table["rows"]:
        note = (f" — too small to decide (fewer than {datasets.MIN_TEST_SIZE} rows): shown, never stops a deploy"
                if row["small"] else "")
        ctx.log(f"{row['label']} ({row['size']}): live {_pct(row['live'])}, new {_pct(row['new'])}, "
                f"{_points(row['delta'])}{note}")
    if datasets.dataset_label(datasets.BASE_HELD_OUT) in worse:
        ctx.log("worse on the base held-out slice (imported train rows never trained on): the retrained models lost "
                "part of what they knew from the base data; a lower retraining.new_round_weight gives the new round "
                "less pull")
    run.refresh_from_db(fields=["decision", "decided_by"])
    PipelineRun.objects.filter(pk=run.pk).update(comparison=table)
    if not worse:
        ctx.log(f"the new ensemble is within {limit:g} point(s) of the live one on every test set: it is deployed")
        return {"verdict": "better", "worse": []}
    who = run.decided_by.username if run.decided_by else "an owner"
    if run.decision == PipelineRun.Decision.APPROVED:
        ctx.log(f"worse on {', '.join(worse)}, but {who} approved it: the new ensemble is deployed")
        return {"verdict": "approved", "worse": worse}
    if run.decision == PipelineRun.Decision.DISCARDED:
        PipelineRun.objects.filter(pk=run.pk).update(members=[v.pk for v in live])
        run.members = [v.pk for v in live]
        ctx.log(f"{who} discarded the new ensemble: round {target.number} keeps the live one")
        return {"verdict": "discarded", "worse": worse}
    raise AwaitingApproval(f"the new ensemble is worse than the live one by more than {limit:g} point(s) on "
                           f"{', '.join(worse)}; an owner must approve (deploy it) or discard it (keep the live one)")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}"


def _points(delta: float | None) -> str:
    return "no figure" if delta is None else f"{delta:+.1f} points"


def seed(ctx: StepContext) -> dict[str, Any]:
    if (skipped := skip_generative(ctx, "seeded by hardness (it scores contexts with the encoder ensemble)")):
        return {**skipped, "seeds": 0}
    target = next_round(ctx)
    k = ctx.options.k
    if k == 0:
        ctx.log("k = 0: no hardness seeding")
        return {"seeds": 0}
    chosen = seeding.seed_round(ctx.task, target, _members(ctx), k, ctx.options.pool_max, ctx.log,
                                 encoder=ctx.options.encoder)
    return {"seeds": chosen}


def deploy(ctx: StepContext) -> dict[str, Any]:
    if (skipped := skip_generative(ctx, "deployed")) is not None:
        return {**skipped, "ensemble": []}
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


def open_next(ctx: StepContext) -> dict[str, Any]:
    target = next_round(ctx)
    target.refresh_from_db()
    if target.status == Round.Status.DRAFT:
        round_state.open_draft(target)
        ctx.log(f"round {target.number} is open")
    else:
        ctx.log(f"round {target.number} was already {target.status}")
    return {"round": target.number}


def _members(ctx: StepContext) -> list[ModelVersion]:
    """The next round's ensemble: the models this run trained plus uploads the owner added. Fixed on the run
    the first time a step needs them, so evaluate, seed and deploy agree, and a retry uses the same ones."""
    run = ctx.run
    if run.members is None:
        retrained = ctx.result_of("retrain")
        trained = retrained.get("versions") or retrained.get("kept_live", [])
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
    ("compare", "Compare the new ensemble with the live one", compare),
    ("seed", "Seed the next round (hardness)", seed),
    ("deploy", "Deploy the new ensemble", deploy),
    ("open", "Open the next round", open_next),
]
