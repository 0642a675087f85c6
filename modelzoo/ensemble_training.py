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
from dataclasses import asdict, dataclass, replace
from typing import Any

from django.conf import settings

from modelzoo import data, encoders, services
from modelzoo.models import ModelVersion
from tasks.models import payload_hash
from zoo import encoders as zoo_encoders
from zoo import recipes
from zoo.heads import get_head
from zoo.recipes import CACHED_TOP, FULL, RECIPES, RecipeSpec
from zoo.runtime import ZOO_FILE
from zoo.training import Progress, TrainExample

Status = ModelVersion.Status
PRETRAINED, LIVE = encoders.START_FROM


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
    # the run's encoder, else the task's retraining.encoder, else the site's: as zoo.encoders.resolve reads it
    base["encoder"] = encoders.encoder_for(task, overrides.get("encoder"))
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
                   evaluate_on: Sequence[data.LabelledSet] = (), echo: Progress | None = None,
                   start_from: str | None = None, live: Sequence[ModelVersion] | None = None) -> list[ModelVersion]:
    """One ready model version per seed, trained on `labelled` with `recipe`. `echo(done, total, stats)` gets
    the progress of the whole ensemble (e.g. a CLI bar, or the pipeline's step progress).

    `start_from` (else the task's retraining.start_from): "pretrained" builds every member from the encoder as it
    was pretrained (a fresh head); "live" starts member i from the live ensemble's member i (`live`, else the
    ensemble of the task's latest round that has one; seeds beyond its size start from its last member): that
    member's artifact folder is the encoder, so its weights, head included, carry over (the task's labels are the
    same). With no live ensemble (the first round) "live" trains from the pretrained encoder."""
    RECIPES.lookup(recipe)  # an unknown recipe: a ValueError naming the known ones
    if not labelled.inputs:
        raise ValueError(f"no training examples in {labelled.name}")
    names = list(names or [f"{task.slug}-s{seed}" for seed in seeds])
    start = encoders.start_from_for(task, start_from)
    starts = _live_starts(task, live, len(seeds)) if start == LIVE else None
    full_overrides = dict(full_overrides or {})
    chosen = encoders.label_of(task, full_overrides.get("encoder") if recipe == FULL else
                               (spec.encoder if spec is not None else None))
    if recipe == FULL:
        full_overrides["encoder"] = encoders.encoder_for(task, full_overrides.get("encoder"))
        versions = _train_full(task, labelled, seeds, names, full_overrides, parent, echo, starts)
    else:
        versions = _train_cached(task, labelled, seeds, names, spec or default_recipe(task), dev, reuse, parent, echo,
                                 starts)
    _record_start(versions, chosen, start if starts else PRETRAINED, starts)
    for version in versions:
        for labelled_set in evaluate_on:
            services.evaluate(version, labelled_set)
    return versions


def _live_starts(task, live: Sequence[ModelVersion] | None, n: int) -> list[ModelVersion] | None:
    """The live member each new member starts from (position by position), or None without a live ensemble."""
    if live is None:
        live = []
        for round_ in task.rounds.exclude(status="draft").order_by("-number"):
            live = services.active_members(round_)
            if live:
                break
    usable = [v for v in live if v.head == task.kind_impl.head and (v.artifact_path / ZOO_FILE).is_file()]
    if not usable:
        return None
    return [usable[min(i, len(usable) - 1)] for i in range(n)]


def _start_folder(version: ModelVersion) -> str:
    """A live member's artifact as the encoder zoo.encoders resolves (its folder, checked as any checkpoint)."""
    return zoo_encoders.check_folder(version.artifact_path).name


def _record_start(versions: Sequence[ModelVersion], chosen: str, start: str,
                  starts: Sequence[ModelVersion] | None) -> None:
    """Each version's lineage says which encoder and start it was trained from (leaderboard, job page)."""
    for i, version in enumerate(versions):
        extra = {"encoder": chosen, "start_from": start}
        if starts:
            extra["started_from"] = {"model_version": starts[i].pk, "name": starts[i].name}
        if all(version.lineage.get(k) == v for k, v in extra.items()):
            continue
        version.lineage = {**version.lineage, **extra}
        ModelVersion.objects.filter(pk=version.pk).update(lineage=version.lineage)


def _train_full(task, labelled, seeds, names, overrides, parent, echo, starts=None) -> list[ModelVersion]:
    versions = []
    for index, (seed, name) in enumerate(zip(seeds, names, strict=True)):
        member_overrides = {**overrides, "encoder": _start_folder(starts[index])} if starts else overrides
        spec = services.default_spec(task, seed=seed, **member_overrides)

        def member_echo(step: int, total: int, stats: dict[str, float], index: int = index) -> None:
            if echo:
                echo(index * total + step, total * len(seeds), stats)

        versions.append(services.train_model(task, spec, labelled, name=name, reuse=True,
                                             parent=starts[index] if starts else parent, echo=member_echo))
    return versions


def _train_cached(task, labelled, seeds, names, spec: RecipeSpec, dev, reuse, parent, echo,
                  starts=None) -> list[ModelVersion]:
    if starts:  # each member from its own live member: one recipe call per member (no shared lower layers)
        return _train_cached_live(task, labelled, seeds, names, spec, dev, reuse, echo, starts)
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


def _train_cached_live(task, labelled, seeds, names, spec: RecipeSpec, dev, reuse, echo, starts) -> list[ModelVersion]:
    """Cached-top from the live members: member i's encoder is live member i's artifact folder, so its lower layers
    are encoded for it alone and its trained top blocks and head (`keep_head`) are where it starts. The progress
    of the whole ensemble is the members' in turn."""
    versions = []
    for index, (seed, name) in enumerate(zip(seeds, names, strict=True)):
        member_spec = replace(spec, encoder=_start_folder(starts[index]))

        def member_echo(done: int, total: int, stats: dict[str, float], index: int = index) -> None:
            if echo:
                echo(index * total + done, total * len(seeds),
                     {**stats, "member": float(index)} if "member" in stats else stats)

        versions += _train_cached(task, labelled, [seed], [name], member_spec, dev, reuse, starts[index],
                                  member_echo if echo else None)
    return versions


def _done_message(metrics: dict[str, Any]) -> str:
    early = " (stopped early)" if metrics.get("stopped_early") else ""
    return f"trained: {metrics.get('steps')} steps{early}, {metrics.get('seconds')} s"[:200]


class EnsembleProgress:
    """Writes each member's own progress to its row while the recipe trains them (at most once a second, and
    whenever a member finishes). The recipe encodes the data once for every member, then trains the members one
    after another (`zoo.recipes.train_ensemble`), so each row says where that member is: sharing the encoding,
    training (its step and its own running loss), waiting for the member before it, or trained (its steps and final
    loss) while the others train. A member's share of the work is its slice of the shared encoding plus its own
    steps, so the mean of the rows' progress (the figure the task page shows) is the ensemble's."""

    def __init__(self, versions: Sequence[ModelVersion], echo: Progress | None = None, every_s: float = 1.0):
        self.ids, self.echo, self.every_s, self.last = [v.pk for v in versions], echo, every_s, 0.0
        n = len(self.ids)
        self.steps_done, self.planned = [0.0] * n, [0.0] * n
        self.loss: list[float | None] = [None] * n
        self.finished: list[dict[str, float] | None] = [None] * n
        self.encoded, self.batches, self.total, self.current = 0.0, 0.0, 0.0, None
        self.written: list[tuple[float, str] | None] = [None] * n

    def __call__(self, done: int, total: int, stats: dict[str, float]) -> None:
        if self.echo:
            self.echo(done, total, stats)
        self.total = float(total)
        finished_now = self._read(done, stats)
        now = time.monotonic()
        if finished_now or done >= total or now - self.last >= self.every_s:
            self.last = now
            self._write()

    def _read(self, done: int, stats: dict[str, float]) -> bool:
        member = stats.get("member")
        if member is None:  # encoding the data once, for every member
            self.encoded, self.batches = float(done), float(stats.get("batches", self.batches or done))
            return False
        i = int(member)
        if not 0 <= i < len(self.ids):
            return False
        self.current = i
        self.planned[i] = float(stats.get("steps", self.planned[i]))
        self.steps_done[i] = float(stats.get("step", self.steps_done[i]))
        self.loss[i] = stats.get("loss", self.loss[i])
        if stats.get("finished"):
            self.finished[i] = {"steps": self.steps_done[i], "planned": self.planned[i], "loss": self.loss[i]}
            return True
        return False

    def planned_steps(self, i: int) -> float:
        """A member's planned steps: what the recipe said, or before it starts the same share as every member's
        (the recipe plans as many steps for each)."""
        return self.planned[i] or max((self.total - self.batches) / max(len(self.ids), 1), 0.0)

    def progress(self, i: int) -> float:
        n = len(self.ids)
        if self.finished[i] is not None:
            return 1.0
        share = self.batches / n + self.planned_steps(i)
        if share <= 0:
            return 0.0
        return round(min((self.encoded / n + self.steps_done[i]) / share, 0.999), 4)

    def message(self, i: int) -> str:
        n, current = len(self.ids), self.current
        who = f"member {i + 1}/{n}"
        if self.finished[i] is not None:
            f = self.finished[i]
            early = f", stopped early at {int(f['steps'])} of {int(f['planned'])} steps" if f["steps"] < f["planned"] \
                else f", {int(f['steps'])} steps"
            rest = f"; waiting for member {current + 2}/{n}" if current is not None and current + 1 < n else ""
            loss = f", loss {f['loss']:.3f}" if f["loss"] is not None else ""
            return f"{who}: trained{early}{loss}{rest}"
        if current is None:
            return f"{who}: encoding the data once for all {n} members ({int(self.encoded)}/{int(self.batches)} batches)"
        if i == current:
            loss = f", loss {self.loss[i]:.3f}" if self.loss[i] is not None else ""
            return f"{who}: training, step {int(self.steps_done[i])}/{int(self.planned_steps(i))}{loss}"
        return f"{who}: waiting (the members train one after another; member {current + 1}/{n} is training)"

    def _write(self) -> None:
        for i, pk in enumerate(self.ids):
            row = (self.progress(i), self.message(i)[:200])
            if row != self.written[i]:
                ModelVersion.objects.filter(pk=pk, status=Status.TRAINING).update(progress=row[0],
                                                                                 progress_message=row[1])
                self.written[i] = row
