"""What closing the current round will do, in numbers, before the owner confirms it.

Every figure comes from the module that owns the rule: the splits from `exports.splits.preview` (what an
assignment now would store), the training and test sets as `rounds.datasets` builds them, the ensemble from
the pipeline's options and the uploads the owner added, and the hardness pool from `hardness.services`.
Nothing is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from exports import splits
from modelzoo.services import active_members
from rounds.datasets import BASE_HELD_OUT, BASE_TEST, dataset_label
from rounds.models import ResearcherModel
from rounds.options import pipeline_options
from tasks.models import LabeledItem, Round, Task


@dataclass
class TestSet:
    label: str
    size: int


@dataclass
class ClosePreview:
    closing: int | None  # the round closed now (None: the task has no round yet)
    opening: int  # the round opened at the end
    collected: int  # examples in the closing round that can be exported (scored, not retracted)
    closing_splits: dict[str, int]  # train / dev / test / held_back / excluded of the closing round
    train_imported: int  # imported train items (the seed data)
    train_collected: int  # every round's train split
    test_sets: list[TestSet] = field(default_factory=list)
    seeds: int = 0  # models trained (one per seed)
    uploads: list[str] = field(default_factory=list)  # researchers' models the owner added to the ensemble
    seed_per_label: int = 0
    labels: int = 0
    pool: int = 0  # pool items not yet used as another round's seeds
    seeding: bool = True  # whether the next round is seeded (every kind is, by a weak scorer)
    validation_continues: bool = True
    live_models: int = 0  # models of the closing round's live ensemble
    new_training: int = 0  # training rows the live ensemble has not seen (the closing round's train split, new imports)
    retrain_anyway: bool = False  # the task's setting retraining.retrain_without_new_data

    @property
    def keeps_live(self) -> bool:
        """Closing keeps the live ensemble unless the owner ticks "retrain anyway" (rounds.steps.retrain)."""
        return bool(self.live_models) and self.new_training == 0 and not self.retrain_anyway

    @property
    def train_total(self) -> int:
        return self.train_imported + self.train_collected

    @property
    def members(self) -> int:
        return self.seeds + len(self.uploads)

    @property
    def seeded_at_most(self) -> int:
        return min(self.pool, self.seed_per_label * self.labels) if self.seeding else 0


def close_preview(task: Task) -> ClosePreview:
    closing = task.current_round or task.rounds.exclude(status=Round.Status.DRAFT).order_by("-number").first()
    per_round = {r.number: splits.preview(r) for r in splits.rounds_with_data(task)}
    options = pipeline_options()
    preview = ClosePreview(
        closing=closing.number if closing else None,
        opening=(closing.number + 1) if closing else 1,
        collected=splits.exported(closing).count() if closing else 0,
        closing_splits=per_round.get(closing.number, {}) if closing else {},
        train_imported=LabeledItem.objects.filter(task=task, split=LabeledItem.Split.TRAIN).count(),
        train_collected=sum(counts["train"] for counts in per_round.values()),
        test_sets=test_sets(task, per_round),
        seeds=len(options.seeds),
        uploads=list(ResearcherModel.objects.filter(task=task, in_next_ensemble=True, model_version__isnull=False)
                     .values_list("name", flat=True)),
        seed_per_label=task.typed_config.seeding.k_per_label if options.k is None else options.k,
        labels=1 if task.kind_impl.answer_is_span else len(getattr(task.typed_config, "labels", []) or []),
        pool=min(pool_size(task), task.typed_config.seeding.pool_max if options.pool_max is None else options.pool_max),
        seeding=True,  # every kind is seeded: a weak scorer trained on the pool scores it (docs/seeding.md)
        validation_continues=task.typed_config.validation.continue_after_close,
        retrain_anyway=task.typed_config.retraining.retrain_without_new_data,
    )
    live = active_members(closing)
    if live:
        since = min(v.created_at for v in live)
        preview.live_models = len(live)
        preview.new_training = preview.closing_splits.get("train", 0) + LabeledItem.objects.filter(
            task=task, split=LabeledItem.Split.TRAIN, created_at__gt=since).count()
    return preview


def test_sets(task: Task, per_round: dict[int, dict[str, int]]) -> list[TestSet]:
    """The sets every model will be evaluated on: each round's test split, the base test set, then the held-out
    slice of the base training data."""
    out = [TestSet(dataset_label(f"round-{n}/test"), counts["test"]) for n, counts in sorted(per_round.items())
           if counts["test"]]
    base = LabeledItem.objects.filter(task=task, split=LabeledItem.Split.TEST).count()
    if base:
        out.append(TestSet(dataset_label(BASE_TEST), base))
    held_out = LabeledItem.objects.filter(task=task, split=LabeledItem.Split.HELD_OUT).count()
    if held_out:  # the slice of the base training data kept out of training (forgetting shows there)
        out.append(TestSet(dataset_label(BASE_HELD_OUT), held_out))
    return out


def pool_size(task: Task) -> int:
    # Imported here, as rounds.seeding does: hardness brings scipy, which the web process otherwise never needs.
    from hardness.services import item_pool

    return item_pool(task, None).count()
