"""Training a whole ensemble (one model version per seed) with a recipe (`zoo.recipes`): the demo models
and the round pipeline's retraining both come here.

- ``cached-top`` (default): the frozen lower layers run once for every member; the members train their top
  block(s) on the cache, one after another, with early stopping on a dev split carved from the train data.
- ``full``: today's recipe (`zoo.training.train` per seed, every layer, fixed epochs), for comparison.

Every member is a `ModelVersion` in status *training* from the start, with its progress on the row (the task
page shows it); on success each becomes *ready*, on failure *failed*. With `reuse`, a member whose data and
settings did not change is registered from an existing artifact instead of retrained.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings

from modelzoo import data, services
from modelzoo.models import ModelVersion
from tasks.models import payload_hash
from zoo import recipes
from zoo.heads import get_head
from zoo.recipes import CACHED_TOP, FULL, RECIPES, RecipeSpec
from zoo.training import Progress, TrainExample

Status = ModelVersion.Status


@dataclass
class MemberSettings(RecipeSpec):
    """What a cached-top member was trained with (its hyperparameters and fingerprint)."""

    seed: int = 0
    recipe: str = CACHED_TOP


def default_recipe(task, **overrides: Any) -> RecipeSpec:
    """The cached-top settings for a task's head and labels, each layer on top of the one before: `RecipeSpec`'s
    defaults, the head's `recipe_defaults` (zoo.heads), the task kind's `recipe_defaults` (tasks.kinds: what this
    kind's data needs beyond its head's, e.g. NLI fine-tunes every block), settings MODELZOO_RECIPE (every task),
    then `overrides` (`None` ones are ignored)."""
    kind = task.kind_impl
    head = get_head(kind.head)
    base: dict[str, Any] = {"head": head.name, "labels": list(task.typed_config.labels) if head.labelled else []}
    base.update(head.recipe_defaults)
    base.update(kind.recipe_defaults)
    base.update(settings.MODELZOO_RECIPE)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return RecipeSpec(**base)


def member_fingerprint(task, spec: RecipeSpec, seed: int, keys: Sequence[str]) -> str:
    settings_ = asdict(spec)
    for name, default in (("bf16", False), ("select_on", "loss")):  # settings added later: members trained
        if settings_.get(name) == default:  # before them keep their fingerprint
            settings_.pop(name, None)
    return payload_hash(task.slug, {"recipe": CACHED_TOP, "spec": settings_, "seed": seed}, sorted(keys))


def train_ensemble(task, labelled: data.LabelledSet, seeds: Sequence[int], *, names: Sequence[str] | None = None,
                   recipe: str = CACHED_TOP, spec: RecipeSpec | None = None, full_overrides: dict | None = None,
                   dev: data.LabelledSet | None = None, reuse: bool = True, parent: ModelVersion | None = None,
                   evaluate_on: Sequence[data.LabelledSet] = (), echo: Progress | None = None) -> list[ModelVersion]:
    """One ready model version per seed, trained on `labelled` with `recipe`. `echo(done, total, stats)` gets
    the progress of the whole ensemble (e.g. a CLI bar, or the pipeline's step progress)."""
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {', '.join(RECIPES)}")
    if not labelled.inputs:
        raise ValueError(f"no training examples in {labelled.name}")
    names = list(names or [f"{task.slug}-s{seed}" for seed in seeds])
    if recipe == FULL:
        versions = _train_full(task, labelled, seeds, names, full_overrides or {}, parent, echo)
    else:
        versions = _train_cached(task, labelled, seeds, names, spec or default_recipe(task), dev, reuse, parent, echo)
    for version in versions:
        for labelled_set in evaluate_on:
            services.evaluate(version, labelled_set)
    return versions


def _train_full(task, labelled, seeds, names, overrides, parent, echo) -> list[ModelVersion]:
    versions = []
    for index, (seed, name) in enumerate(zip(seeds, names, strict=True)):
        spec = services.default_spec(task, seed=seed, **overrides)

        def member_echo(step: int, total: int, stats: dict[str, float], index: int = index) -> None:
            if echo:
                echo(index * total + step, total * len(seeds), stats)

        versions.append(services.train_model(task, spec, labelled, name=name, reuse=True, parent=parent,
                                             echo=member_echo))
    return versions


def _train_cached(task, labelled, seeds, names, spec: RecipeSpec, dev, reuse, parent, echo) -> list[ModelVersion]:
    fps = [member_fingerprint(task, spec, seed, labelled.keys) for seed in seeds]
    versions: list[ModelVersion | None] = [services._reusable(task, fp) if reuse else None for fp in fps]
    lineage = {"data": labelled.name, "examples": len(labelled.keys), "recipe": CACHED_TOP,
               **({"dev": dev.name, "dev_examples": len(dev.keys)} if dev is not None else {})}
    todo = []
    for i, (seed, fp) in enumerate(zip(seeds, fps, strict=True)):
        if versions[i] is not None:
            continue
        # A run that was stopped (e.g. Ctrl-C on `make run`) left its members "training": they never finish.
        ModelVersion.objects.filter(task=task, fingerprint=fp, status=Status.TRAINING).update(
            status=Status.FAILED, error="interrupted; superseded by a new training run", progress_message="interrupted")
        settings_ = MemberSettings(**asdict(spec), seed=seed)
        version = services._create_version(task, settings_, fp, names[i], parent, lineage)
        found = services._artifact_on_disk(task, fp) if reuse else None
        if found is not None:  # a retry after a crash: an earlier attempt finished this member
            relative = str(found.relative_to(settings.MODEL_STORE))
            ModelVersion.objects.filter(pk=version.pk).update(artifact=relative)
            version.artifact = relative
            versions[i] = services.transition(version, Status.READY, metrics=services._read_json(found / "metrics.json"),
                                              progress=1.0, progress_message="reused an existing artifact")
        else:
            versions[i] = version
            todo.append(i)
    if todo:
        training = [versions[i] for i in todo]
        examples = [TrainExample(m, t) for m, t in zip(labelled.inputs, labelled.targets, strict=True)]
        dev_examples = [TrainExample(m, t) for m, t in zip(dev.inputs, dev.targets, strict=True)] if dev is not None else None
        metas = [{"task": task.slug, "fingerprint": fps[i], "data": labelled.name, "model_version": versions[i].pk}
                 for i in todo]
        recorder = EnsembleProgress(training, echo)
        try:
            metrics = recipes.train_ensemble(examples, spec, [v.artifact_path for v in training],
                                             [seeds[i] for i in todo], dev=dev_examples, keys=labelled.keys,
                                             progress=recorder, extra_meta=metas)
        except Exception as exc:
            for version in training:
                services.transition(version, Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000],
                                    progress_message="failed")
            raise
        for version, member_metrics in zip(training, metrics, strict=True):
            services.transition(version, Status.READY, metrics=member_metrics, progress=1.0,
                                progress_message=_done_message(member_metrics))
    return [v for v in versions if v is not None]


def _done_message(metrics: dict[str, Any]) -> str:
    early = " (stopped early)" if metrics.get("stopped_early") else ""
    return f"trained: {metrics.get('steps')} steps{early}, {metrics.get('seconds')} s"[:200]


class EnsembleProgress:
    """Writes the ensemble's progress to every member still training, at most once a second (and at the end)."""

    def __init__(self, versions: Sequence[ModelVersion], echo: Progress | None = None, every_s: float = 1.0):
        self.ids, self.echo, self.every_s, self.last = [v.pk for v in versions], echo, every_s, 0.0

    def __call__(self, done: int, total: int, stats: dict[str, float]) -> None:
        if self.echo:
            self.echo(done, total, stats)
        now = time.monotonic()
        if done >= total or now - self.last >= self.every_s:
            self.last = now
            member = stats.get("member")
            what = f"member {int(member) + 1}/{len(self.ids)}" if member is not None else "encoding the data once"
            loss = f", loss {stats['loss']:.3f}" if "loss" in stats else ""
            ModelVersion.objects.filter(pk__in=self.ids, status=Status.TRAINING).update(
                progress=round(min(done / max(total, 1), 0.999), 4), progress_message=f"{what}{loss}"[:200])
