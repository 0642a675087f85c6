"""Evaluate every model version and every round's ensemble on every test set, measuring speed and memory.

Test sets (`rounds.datasets.test_sets`): each round's test split as its dataset export holds it,
"round-<n>/test", the base test set, "*/test" (imported LabeledItems with split=test), and the base held-out
slice, "*/heldout" (the imported train rows the importer held out: never trained on, so a retraining that forgets
the base data loses accuracy there and `compare_ensembles` stops it for approval). A pair already evaluated on a
set of the same size is skipped, so the step is cheap to repeat and old models are scored only on new sets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from modelzoo import intervals, opponent
from modelzoo.models import Ensemble, EnsembleScore, Evaluation, ModelMeasurement, ModelVersion
from modelzoo.services import active_members, predict_with
from modelzoo.serving import ModelRef, get_backend
from rounds import datasets, robustness
from rounds.models import ResearcherModel
from tasks.models import Round, Task
from zoo.aggregation import get_strategy
from zoo.data import LabelledSet
from zoo.heads import get_head
from zoo.serving.inprocess import InProcessBackend
from zoo.types import BackendError

Log = Callable[[str], None]
Progress = Callable[[float, str], None]


def scoreable_versions(task: Task) -> list[ModelVersion]:
    ok = [ModelVersion.Status.READY, ModelVersion.Status.DEPLOYED]
    return list(ModelVersion.objects.filter(task=task, status__in=ok).select_related("task").order_by("version"))


def round_ensembles(task: Task) -> dict[int, list[ModelVersion]]:
    """Each round's active ensemble, by round number."""
    out: dict[int, list[ModelVersion]] = {}
    for ensemble in Ensemble.objects.filter(round__task=task, active=True).select_related("round"):
        out[ensemble.round.number] = ensemble.ordered_members()
    return out


def input_length(model_input: dict[str, Any]) -> int:
    return sum(len(v) for v in model_input.values() if isinstance(v, str))


class PredictionCache:
    """Predictions of one model on one set, computed once; timing each model for its throughput.

    Inputs run in length order (each batch padded to its own longest row). With the in-process backend, the
    members of an ensemble are predicted together by `prefetch`: members that share a frozen trunk (cached-top)
    run it once per batch; each model is then charged an equal share of the time."""

    def __init__(self) -> None:
        self.predictions: dict[tuple[int, str], list[dict[str, Any]]] = {}
        self.timing: dict[int, list[float]] = {}  # version id -> [examples, seconds]

    def _record(self, version_id: int, examples: int, seconds: float) -> None:
        spent = self.timing.setdefault(version_id, [0.0, 0.0])
        spent[0] += examples
        spent[1] += seconds

    def get(self, version: ModelVersion, labelled: LabelledSet) -> list[dict[str, Any]]:
        key = (version.pk, labelled.name)
        if key not in self.predictions:
            if not opponent.is_llm(version):  # a language model opponent is no backend's: it loads on first use
                get_backend().prepare([ModelRef.of(version)])  # load outside the timed part
            order = sorted(range(len(labelled.inputs)), key=lambda i: input_length(labelled.inputs[i]))
            started = time.perf_counter()
            ordered = predict_with([version], [labelled.inputs[i] for i in order])
            self._record(version.pk, len(labelled.inputs), time.perf_counter() - started)
            predictions: list[dict[str, Any]] = [{}] * len(order)
            for position, i in enumerate(order):
                predictions[i] = ordered[position]
            self.predictions[key] = predictions
        return self.predictions[key]

    def prefetch(self, versions: Sequence[ModelVersion], labelled: LabelledSet, batch_size: int = 32) -> None:
        """Predict the models among `versions` that have the same head together, in one backend call per batch:
        members that share a frozen trunk (cached-top, found by the backend comparing their tensors:
        `zoo.trunk`) run it once per batch. Each model is charged an equal share of the time."""
        if getattr(get_backend(), "name", "") != InProcessBackend.name or not labelled.inputs:
            return
        groups: dict[str, list[ModelVersion]] = {}
        for version in versions:
            if (version.pk, labelled.name) not in self.predictions and not opponent.is_llm(version):
                groups.setdefault(version.head, []).append(version)
        order = sorted(range(len(labelled.inputs)), key=lambda i: input_length(labelled.inputs[i]))
        ordered_inputs = [labelled.inputs[i] for i in order]
        for members in groups.values():
            if len(members) < 2:
                continue
            refs = [ModelRef.of(v) for v in members]
            backend = get_backend()
            try:
                backend.prepare(refs)  # load outside the timed part
            except BackendError:
                continue  # a missing or broken artifact: `get` reports it per model
            started = time.perf_counter()
            per_model: list[list[dict[str, Any]]] = [[] for _ in members]
            for at in range(0, len(ordered_inputs), batch_size):
                for m, predictions in enumerate(backend.predict(refs, ordered_inputs[at:at + batch_size])):
                    per_model[m] += predictions
            share = (time.perf_counter() - started) / len(members)
            for version, ordered in zip(members, per_model, strict=True):
                predictions: list[dict[str, Any]] = [{}] * len(order)
                for position, i in enumerate(order):
                    predictions[i] = ordered[position]
                self.predictions[(version.pk, labelled.name)] = predictions
                self._record(version.pk, len(labelled.inputs), share)


def evaluate_everything(task: Task, extra: dict[int, Sequence[ModelVersion]] | None = None,
                        log: Log = print, progress: Progress | None = None, remeasure: bool = False) -> dict[str, Any]:
    """Score all ready models and all rounds' ensembles (plus `extra` ensembles, by round) on every test set, with
    their robustness and fairness (`rounds.robustness`; `remeasure`: again, even on the same perturbed copy)."""
    sets = datasets.test_sets(task)
    versions = scoreable_versions(task)
    ensembles = {**round_ensembles(task), **{n: list(m) for n, m in (extra or {}).items()}}
    log(f"{len(versions)} model versions, {len(ensembles)} ensembles, test sets: {', '.join(sets) or 'none'}")
    cache, counts = PredictionCache(), {"evaluations": 0, "ensemble_scores": 0, "robustness": 0}
    for i, name in enumerate(sets):
        labelled = datasets.load(task, name)
        if not labelled.inputs:
            continue
        counts["evaluations"] += _score_models(task, versions, labelled, cache, log)
        counts["ensemble_scores"] += _score_ensembles(task, ensembles, labelled, cache, log)
        counts["robustness"] += robustness.measure(task, labelled, versions, ensembles, cache, log,
                                                   force=remeasure)
        if progress:
            progress((i + 1) / len(sets), f"{i + 1}/{len(sets)} test sets")
    record_measurements(cache)
    return {**counts, "test_sets": sets}


def scored(task: Task, labelled: LabelledSet, predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """The kind's metrics of `predictions` on `labelled`, each with its 95 % interval (`modelzoo.intervals`)."""
    kind, config = task.kind_impl, task.typed_config
    metrics = kind.evaluate(config, labelled.targets, predictions)
    return intervals.with_intervals(kind, config, labelled.targets, predictions, metrics)


def _score_models(task: Task, versions: list[ModelVersion], labelled: LabelledSet,
                  cache: PredictionCache, log: Log) -> int:
    fresh = set(Evaluation.objects.filter(model_version__in=versions, dataset=labelled.name,
                                          size=len(labelled.inputs)).values_list("model_version_id", flat=True))
    done = 0
    cache.prefetch([v for v in versions if v.pk not in fresh], labelled)
    for version in versions:
        if version.pk in fresh:
            continue
        try:
            predictions = cache.get(version, labelled)
        except BackendError as exc:
            if not opponent.is_llm(version):
                raise
            log(f"{version.name} on {labelled.name}: not evaluated now ({exc.message})")  # its provider is down
            continue
        metrics = scored(task, labelled, predictions)
        Evaluation.objects.update_or_create(model_version=version, dataset=labelled.name,
                                            defaults={"size": len(labelled.inputs), "metrics": metrics})
        log(f"{version.name} on {labelled.name} ({len(labelled.inputs)}): {_fmt(metrics)}")
        done += 1
    return done


def _score_ensembles(task: Task, ensembles: dict[int, list[ModelVersion]], labelled: LabelledSet,
                     cache: PredictionCache, log: Log) -> int:
    done = 0
    for number, members in sorted(ensembles.items()):
        ids = [v.pk for v in members]
        current = EnsembleScore.objects.filter(task=task, round_number=number, dataset=labelled.name).first()
        if not members or (current and current.members == ids and current.size == len(labelled.inputs)):
            continue
        aggregate = get_strategy(get_head(members[0].head).default_strategy)
        cache.prefetch(members, labelled)
        per_model = [cache.get(v, labelled) for v in members]
        combined = [aggregate([p[i] for p in per_model]) for i in range(len(labelled.inputs))]
        metrics = scored(task, labelled, combined)
        EnsembleScore.objects.update_or_create(
            task=task, round_number=number, dataset=labelled.name,
            defaults={"members": ids, "size": len(labelled.inputs), "metrics": metrics},
        )
        log(f"round {number} ensemble on {labelled.name}: {_fmt(metrics)}")
        done += 1
    return done


def record_measurements(cache: PredictionCache) -> None:
    versions = ModelVersion.objects.in_bulk(list(cache.timing))
    for pk, (examples, seconds) in cache.timing.items():
        ModelMeasurement.objects.update_or_create(
            model_version_id=pk,
            defaults={"examples": int(examples), "seconds": round(seconds, 4),
                      "throughput": round(examples / max(seconds, 1e-9), 2),
                      "memory_mb": (opponent.memory_mb(versions[pk]) if opponent.is_llm(versions[pk])
                                    else weights_mb(versions[pk].artifact_path))},
        )


def weights_mb(folder: Path) -> float:
    """Memory a model's weights take once loaded: the safetensors payload (parameters and buffers)."""
    return round(sum(f.stat().st_size for f in Path(folder).glob("*.safetensors")) / 1e6, 2)


def evaluate_version(version: ModelVersion, log: Log = print) -> dict[str, Any]:
    """Score one model version on every test set of its task (a researcher's upload)."""
    task = version.task
    cache, done = PredictionCache(), 0
    for name in datasets.test_sets(task):
        labelled = datasets.load(task, name)
        if labelled.inputs:
            done += _score_models(task, [version], labelled, cache, log)
            robustness.measure(task, labelled, [version], {}, cache, log)
    record_measurements(cache)
    return {"evaluations": done}


def evaluate_round_ensemble(round_: Round, log: Log = print) -> dict[str, Any]:
    """Score a round's in-loop models, the task's language model opponent and the round's ensemble on every test
    set of the task (for a first round: the base test set), with their throughput and memory. Called when an
    ensemble is deployed outside the pipeline (`modelzoo.signals.ensemble_deployed`: the demo models,
    `train_model --deploy`), so the leaderboard is never empty while a round is open, an upload cannot outrank
    unevaluated models, and the opponent is never "not evaluated" beside them.
    Idempotent: pairs already scored on a set of the same size are skipped."""
    members = active_members(round_)
    task, cache, counts = round_.task, PredictionCache(), {"evaluations": 0, "ensemble_scores": 0}
    rival = opponent.latest(task)  # ranked beside the models it is shown with (the leaderboard says it decides nothing)
    scored = [*members, rival] if rival is not None else members
    for name in datasets.test_sets(task) if members else []:
        labelled = datasets.load(task, name)
        if labelled.inputs:
            counts["evaluations"] += _score_models(task, scored, labelled, cache, log)
            counts["ensemble_scores"] += _score_ensembles(task, {round_.number: members}, labelled, cache, log)
    record_measurements(cache)
    return counts


def evaluate_upload(upload_id: int) -> ResearcherModel:
    """Score a researcher's uploaded model on every test set of its task; a broken model marks the upload failed."""
    upload = ResearcherModel.objects.select_related("model_version__task").get(pk=upload_id)
    if upload.status != ResearcherModel.Status.EVALUATING:  # abandoned (or already done): nothing to do
        return upload
    evaluating = ResearcherModel.objects.filter(pk=upload.pk, status=ResearcherModel.Status.EVALUATING)
    try:
        evaluate_version(upload.model_version, log=lambda _m: None)
    except Exception as exc:  # a broken model is the uploader's problem to see, not a worker crash
        evaluating.update(status=ResearcherModel.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:3000])
    else:
        evaluating.update(status=ResearcherModel.Status.EVALUATED, error="")
    upload.refresh_from_db()
    return upload


def compare_ensembles(task: Task, live: tuple[int, Sequence[ModelVersion]], new: tuple[int, Sequence[ModelVersion]],
                      log: Log = print) -> dict[str, Any]:
    """The new ensemble against the live one on every test set, in the kind's main metric: one row per set with
    both figures and the difference in points (new − live, ×100), and whether the set is too small to decide
    (`small`: fewer than `datasets.MIN_TEST_SIZE` rows). Scores already stored for the same members and set size
    (the evaluate step's) are reused; missing ones are computed and stored."""
    from rounds.leaderboard import primary_metric  # the leaderboard imports this module's neighbours

    metric, cache, rows = primary_metric(task), PredictionCache(), []
    (live_round, live_members), (new_round, new_members) = live, new
    for name in datasets.test_sets(task):
        labelled = datasets.load(task, name)
        if not labelled.inputs:
            continue
        _score_ensembles(task, {live_round: list(live_members), new_round: list(new_members)}, labelled, cache, log)
        scores = {s.round_number: s.metrics.get(metric) for s in EnsembleScore.objects.filter(
            task=task, dataset=name, round_number__in=[live_round, new_round])}
        before, after = scores.get(live_round), scores.get(new_round)
        delta = None if before is None or after is None else round((after - before) * 100, 2)
        size = len(labelled.inputs)
        rows.append({"dataset": name, "label": datasets.dataset_label(name), "size": size,
                     "live": before, "new": after, "delta": delta,
                     "small": size < datasets.MIN_TEST_SIZE})  # shown, but decides nothing (rounds.steps.compare)
    record_measurements(cache)
    return {"metric": metric, "live_round": live_round, "new_round": new_round,
            "live_members": [v.pk for v in live_members], "new_members": [v.pk for v in new_members], "rows": rows}


def _fmt(metrics: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items()
                     if k != "intervals")
