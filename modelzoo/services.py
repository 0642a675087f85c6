"""Model-zoo use cases: verdicts for a round, registry transitions, ensembles, training, evaluation."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from dynabench_site.errors import Conflict
from modelzoo import data, opponent
from modelzoo.models import Ensemble, EnsembleMember, Evaluation, ModelVersion
from modelzoo.serving import ModelRef, get_backend
from tasks.models import payload_hash
from zoo import training
from zoo.aggregation import get_strategy
from zoo.explain_methods import DEFAULT_METHOD, METHODS
from zoo.heads import get_head
from zoo.llm.base import ProviderError
from zoo.runtime import ZOO_FILE, read_meta
from zoo.training import Progress, TrainExample, TrainSpec
from zoo.types import BackendError, ModelPrediction, NoEnsembleYet, RoundVerdict

log = logging.getLogger(__name__)
Status = ModelVersion.Status

ALLOWED_TRANSITIONS: dict[str, set[str]] = {
    Status.TRAINING: {Status.READY, Status.FAILED},
    Status.READY: {Status.DEPLOYED, Status.RETIRED},
    Status.DEPLOYED: {Status.READY, Status.RETIRED},
    Status.FAILED: {Status.RETIRED},
    Status.RETIRED: set(),
}


class InvalidTransition(Conflict, ValueError):
    pass


# -- registry ---------------------------------------------------------------------------------------


def transition(version: ModelVersion, to: str, **fields: Any) -> ModelVersion:
    """Move a model version to status `to` if the registry allows it (a conditional update: two callers
    racing on the same version cannot both succeed)."""
    current = version.status
    if to not in ALLOWED_TRANSITIONS[current]:
        raise InvalidTransition(f"{version.name}: cannot go from {current} to {to}")
    updated = ModelVersion.objects.filter(pk=version.pk, status=current).update(status=to, **fields)
    if not updated:
        version.refresh_from_db()
        raise InvalidTransition(f"{version.name}: status changed to {version.status} meanwhile")
    version.status = to
    for name, value in fields.items():
        setattr(version, name, value)
    return version


def active_ensemble(round_) -> Ensemble | None:
    return Ensemble.objects.filter(round=round_, active=True).first()


def active_members(round_) -> list[ModelVersion]:
    """The members of `round_`'s active ensemble, in order; [] when there is no round or no ensemble."""
    ensemble = active_ensemble(round_) if round_ is not None else None
    return ensemble.ordered_members() if ensemble is not None else []


def deploy_ensemble(round_, versions: Sequence[ModelVersion], strategy: str | None = None) -> Ensemble:
    """Make `versions` the round's ensemble (replacing the active one) and prepare them on the backend."""
    _check_members(round_, versions)
    strategy = strategy or get_head(versions[0].head).default_strategy
    get_strategy(strategy)
    get_backend().prepare([ModelRef.of(v) for v in versions])
    with transaction.atomic():
        old = active_ensemble(round_)
        if old is not None:
            Ensemble.objects.filter(pk=old.pk).update(active=False)
        ensemble = Ensemble.objects.create(round=round_, strategy=strategy, active=True)
        EnsembleMember.objects.bulk_create(
            [EnsembleMember(ensemble=ensemble, model_version=v, position=i) for i, v in enumerate(versions)]
        )
        for v in versions:
            if v.status == Status.READY:
                transition(v, Status.DEPLOYED)
        if old is not None:
            _undeploy_unused(old.ordered_members())
    return ensemble


def _check_members(round_, versions: Sequence[ModelVersion]) -> None:
    if not versions:
        raise ValueError("an ensemble needs at least one model version")
    for v in versions:
        if v.task_id != round_.task_id:
            raise ValueError(f"{v.name} belongs to another task")
        if v.status not in (Status.READY, Status.DEPLOYED):
            raise ValueError(f"{v.name} is {v.status}; only ready or deployed models can join an ensemble")
        if opponent.is_llm(v):
            raise ValueError(f"{v.name} is a language model opponent: it scores beside the ensemble, never in it")
    if len({v.head for v in versions}) != 1:
        raise ValueError("all members of an ensemble must have the same head")


def _undeploy_unused(versions: Sequence[ModelVersion]) -> None:
    for v in versions:
        v.refresh_from_db()
        in_use = EnsembleMember.objects.filter(model_version=v, ensemble__active=True).exists()
        if v.status == Status.DEPLOYED and not in_use:
            transition(v, Status.READY)


def retire(version: ModelVersion) -> ModelVersion:
    if EnsembleMember.objects.filter(model_version=version, ensemble__active=True).exists():
        raise InvalidTransition(f"{version.name} is in an active ensemble; deploy another ensemble first")
    get_backend().release([ModelRef.of(version)])
    return transition(version, Status.RETIRED)


# -- predictions ------------------------------------------------------------------------------------


def explanation_method(task=None) -> str:
    """The task's explanation method (`explanation_method` in its settings), else
    `settings.MODEL_EXPLANATION_METHOD`, else word occlusion."""
    configured = getattr(getattr(task, "typed_config", None), "explanation_method", None) if task is not None else None
    method = configured or settings.MODEL_EXPLANATION_METHOD
    return method if method in METHODS else DEFAULT_METHOD


def predict_for_round(round_, model_inputs: list[dict[str, str]], explain: bool = True,
                      method: str | None = None, ensemble: Ensemble | int | None = None) -> list[RoundVerdict]:
    """One verdict per input from the round's active ensemble (or `ensemble`, another ensemble of the same task,
    or its id: a study arm's target), with the explanation of the ensemble's answer over all its members
    (`Backend.explain_ensemble`). Raises BackendError (retryable when trying again later can help; a round without
    a deployed ensemble is retryable too; an `ensemble` of another task, or gone, is not).

    With an explanation, the members' predictions come from the explanation's own forward batch when the
    backend returns them (word occlusion of a classification: one batch per member for verdict and map)."""
    ensemble = _chosen_ensemble(round_, ensemble) if ensemble is not None else active_ensemble(round_)
    if ensemble is None:
        raise NoEnsembleYet(f"{round_} has no deployed model ensemble yet (run `manage.py demo_models` or "
                           f"deploy one); retry once it is deployed")
    members = [ModelRef.of(v) for v in ensemble.ordered_members()]
    backend = get_backend()
    aggregate = get_strategy(ensemble.strategy)
    method = method or explanation_method(round_.task)
    if not explain:
        per_model = backend.predict(members, model_inputs)
        return [_verdict(members, [per_model[m][i] for m in range(len(members))], aggregate, None)
                for i in range(len(model_inputs))]
    verdicts = []
    for model_input in model_inputs:
        explanation = _explanation(backend, members, model_input, None, method)
        predictions = explanation.pop("predictions", None) if explanation else None
        if predictions is None or len(predictions) != len(members):
            predictions = [per_input[0] for per_input in backend.predict(members, [model_input])]
        combined = aggregate(predictions)
        target = get_head(members[0].head).target_of(combined)
        if explanation is not None and not _explains(explanation, target):  # a non-default aggregation
            explanation = _explanation(backend, members, model_input, target, method)
        verdicts.append(_verdict(members, predictions, aggregate, explanation, combined))
    return verdicts


def _chosen_ensemble(round_, ensemble: Ensemble | int) -> Ensemble:
    if not isinstance(ensemble, Ensemble):
        found = Ensemble.objects.select_related("round").filter(pk=ensemble).first()
        if found is None:
            raise BackendError(f"ensemble {ensemble} is gone", retryable=False)
        ensemble = found
    if ensemble.round.task_id != round_.task_id:
        raise BackendError(f"ensemble {ensemble.pk} belongs to another task than {round_}", retryable=False)
    return ensemble


def explain_verdict(task, version_ids: Sequence[int], model_input: dict[str, str],
                    ensemble_prediction: dict[str, Any], method: str | None = None) -> dict[str, Any] | None:
    """The word map of a stored verdict: the ensemble's answer (`ensemble_prediction`, as aggregated when the
    verdict was made) explained over the members that made it (`version_ids`, in their order), by the task's
    method. What the verdict's second job computes (annotation.scoring.explain_example), so a verdict never
    waits for its map. Raises BackendError when the server cannot answer now (retryable) or a member is gone
    (not retryable); None when the models cannot explain."""
    by_id = ModelVersion.objects.in_bulk(list(version_ids))
    missing = [pk for pk in version_ids if pk not in by_id]
    if missing or not version_ids:
        raise BackendError(f"the models of this verdict are gone (model versions {missing or 'none'})", retryable=False)
    members = [ModelRef.of(by_id[pk]) for pk in version_ids]
    target = get_head(members[0].head).target_of(ensemble_prediction)
    return _explanation(get_backend(), members, model_input, target, method or explanation_method(task))


def _verdict(members: list[ModelRef], predictions: list[dict[str, Any]], aggregate, explanation,
             combined: dict[str, Any] | None = None) -> RoundVerdict:
    return RoundVerdict(
        ensemble=combined if combined is not None else aggregate(predictions),
        models=[_model_prediction(r, p) for r, p in zip(members, predictions, strict=True)],
        model_versions=[r.id for r in members], explanation=explanation,
    )


def _explains(explanation: dict[str, Any], target: Any) -> bool:
    """Whether an explanation made without a target explained `target` (the aggregated answer)."""
    if isinstance(target, dict):  # a QA span: the explanation says which one it explained
        return explanation.get("span") == [target["start"], target["end"]]
    return explanation.get("target") == target


def _model_prediction(ref: ModelRef, prediction: dict[str, Any]) -> ModelPrediction:
    kept = {k: v for k, v in prediction.items() if k != "candidates"}
    return ModelPrediction(model_version=ref.id, name=ref.name, prediction=kept)


def _explanation(backend, members: list[ModelRef], model_input: dict[str, str], target: Any,
                 method: str) -> dict[str, Any] | None:
    """Explain the ensemble's answer (`target`, None: its own) over all members. Models that cannot explain
    lose only the explanation; a server that is down fails the verdict (the caller retries)."""
    try:
        result = backend.explain_ensemble(members, model_input, method, target)
    except BackendError as exc:
        if exc.retryable:
            raise
        log.warning("explanation failed for ensemble %s: %s", ", ".join(r.name for r in members), exc)
        return None
    return {**result, "model_versions": [r.id for r in members], "model_version": members[0].id}


def predict_with(versions: Sequence[ModelVersion], model_inputs: list[dict[str, str]],
                 strategy: str | None = None, batch_size: int = 32) -> list[dict[str, Any]]:
    """Aggregated predictions of any model versions (evaluation, hardness); batched. A language model opponent
    predicts through its provider (modelzoo.opponent), alone: it is never aggregated with encoder models."""
    if any(opponent.is_llm(v) for v in versions):
        if len(versions) != 1:
            raise ValueError("a language model opponent predicts alone, never aggregated with other models")
        try:
            return opponent.predict(versions[0], model_inputs)
        except ProviderError as exc:
            raise BackendError(f"{versions[0].name}: {exc.message}", retryable=exc.retryable) from exc
    refs = [ModelRef.of(v) for v in versions]
    aggregate = get_strategy(strategy or get_head(versions[0].head).default_strategy)
    out: list[dict[str, Any]] = []
    for start in range(0, len(model_inputs), batch_size):
        chunk = model_inputs[start:start + batch_size]
        per_model = get_backend().predict(refs, chunk)
        out += [aggregate([per_model[m][i] for m in range(len(refs))]) for i in range(len(chunk))]
    return out


# -- evaluation -------------------------------------------------------------------------------------


def evaluate(version: ModelVersion, labelled: data.LabelledSet) -> Evaluation:
    """Score a model version on a ready labelled set and store the metrics under the set's name."""
    task = version.task
    if not labelled.inputs:
        raise ValueError(f"dataset {labelled.name!r} of task {task.slug} is empty")
    predictions = predict_with([version], labelled.inputs)
    metrics = task.kind_impl.evaluate(task.typed_config, labelled.targets, predictions)
    evaluation, _ = Evaluation.objects.update_or_create(
        model_version=version, dataset=labelled.name, defaults={"size": len(labelled.inputs), "metrics": metrics}
    )
    return evaluation


# -- training ---------------------------------------------------------------------------------------


def default_spec(task, **overrides: Any) -> TrainSpec:
    """Training settings for a task's kind; `None` overrides are ignored."""
    head = get_head(task.kind_impl.head)
    base: dict[str, Any] = {"head": head.name, "max_length": head.default_max_length,
                            "labels": list(task.typed_config.labels) if head.labelled else []}
    base.update({k: v for k, v in overrides.items() if v is not None})
    return TrainSpec(**base)


def fingerprint(task, spec: TrainSpec, keys: Sequence[str]) -> str:
    return payload_hash(task.slug, asdict(spec), sorted(keys))


def train_model(task, spec: TrainSpec | None = None, labelled: data.LabelledSet | None = None, *,
                name: str | None = None, reuse: bool = False, parent: ModelVersion | None = None,
                evaluate_on: Sequence[data.LabelledSet] = (), echo: Progress | None = None) -> ModelVersion:
    """Train a model version on `labelled` (default: the task's imported training set) and register it as ready.
    With `reuse`, an existing artifact for the same data and settings is registered instead of retraining.
    Progress goes to the ModelVersion row (and to `echo`, e.g. a CLI progress bar)."""
    labelled = labelled if labelled is not None else data.training_set(task)
    spec = spec or default_spec(task)
    fp = fingerprint(task, spec, labelled.keys)
    version = (_reusable(task, fp) if reuse else None) or _train_new(task, spec, labelled, fp, name, parent, echo, reuse)
    for labelled_set in evaluate_on:
        evaluate(version, labelled_set)
    return version


def _train_new(task, spec: TrainSpec, labelled: data.LabelledSet, fp: str, name: str | None,
               parent: ModelVersion | None, echo: Progress | None, reuse: bool) -> ModelVersion:
    version = _create_version(task, spec, fp, name, parent, lineage={"data": labelled.name, "examples": len(labelled.keys)})
    found = _artifact_on_disk(task, fp) if reuse else None
    if found is not None:
        ModelVersion.objects.filter(pk=version.pk).update(artifact=str(found.relative_to(settings.MODEL_STORE)))
        version.artifact = str(found.relative_to(settings.MODEL_STORE))
        return transition(version, Status.READY, metrics=_read_json(found / "metrics.json"), progress=1.0,
                          progress_message="reused an existing artifact")
    examples = [TrainExample(i, t, k) for i, t, k in zip(labelled.inputs, labelled.targets, labelled.keys, strict=True)]
    meta = {"task": task.slug, "fingerprint": fp, "data": labelled.name, "model_version": version.pk}
    try:
        metrics = training.train(examples, spec, version.artifact_path, ProgressRecorder(version, echo), meta)
    except Exception as exc:
        transition(version, Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], progress_message="failed")
        raise
    return transition(version, Status.READY, metrics=metrics, progress=1.0, progress_message="trained")


def _create_version(task, spec: TrainSpec, fp: str, name: str | None, parent: ModelVersion | None,
                    lineage: dict[str, Any]) -> ModelVersion:
    for _ in range(5):  # the unique constraint settles a race for the next number
        number = (ModelVersion.objects.filter(task=task).aggregate(n=Max("version"))["n"] or 0) + 1
        try:
            with transaction.atomic():
                return ModelVersion.objects.create(
                    task=task, version=number, name=name or f"{task.slug}-v{number}", head=spec.head,
                    artifact=f"{task.slug}/v{number}-{fp[:12]}", fingerprint=fp, lineage=lineage,
                    hyperparameters=asdict(spec), parent=parent, status=Status.TRAINING,
                )
        except IntegrityError:
            continue
    raise RuntimeError(f"could not allocate a model version number for {task.slug}")


def _reusable(task, fp: str) -> ModelVersion | None:
    candidates = ModelVersion.objects.filter(task=task, fingerprint=fp, status__in=[Status.READY, Status.DEPLOYED])
    return next((v for v in candidates.order_by("-version") if (v.artifact_path / ZOO_FILE).is_file()), None)


def _artifact_on_disk(task, fp: str) -> Path | None:
    folder = Path(settings.MODEL_STORE) / task.slug
    return next((p for p in sorted(folder.glob(f"v*-{fp[:12]}")) if (p / ZOO_FILE).is_file()), None)


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def register_artifact(task, path: Path | str, *, name: str | None = None, lineage: dict[str, Any] | None = None,
                      fingerprint: str = "") -> ModelVersion:
    """Register an artifact folder that already exists (trained elsewhere, or built by a test) as ready."""
    path = Path(path).resolve()
    meta = read_meta(path)
    if meta["head"] != task.kind_impl.head:
        raise ValueError(f"artifact head {meta['head']!r} does not fit task kind {task.kind} ({task.kind_impl.head})")
    trained_with = _read_json(path / "training.json").get("spec")
    spec = TrainSpec(**trained_with) if trained_with else default_spec(task)
    version = _create_version(task, spec, fingerprint, name, None, lineage or {"data": "registered", "path": str(path)})
    store = Path(settings.MODEL_STORE).resolve()
    version.artifact = str(path.relative_to(store)) if path.is_relative_to(store) else str(path)
    ModelVersion.objects.filter(pk=version.pk).update(artifact=version.artifact)
    return transition(version, Status.READY, metrics=_read_json(path / "metrics.json"), progress=1.0)


class ProgressRecorder:
    """Writes training progress to the ModelVersion row at most once a second (and at the end)."""

    def __init__(self, version: ModelVersion, echo: Progress | None = None, every_s: float = 1.0):
        self.version, self.echo, self.every_s, self.last = version, echo, every_s, 0.0

    def __call__(self, step: int, total: int, stats: dict[str, float]) -> None:
        if self.echo:
            self.echo(step, total, stats)
        now = time.monotonic()
        if step == total or now - self.last >= self.every_s:
            self.last = now
            ModelVersion.objects.filter(pk=self.version.pk).update(
                progress=round(step / total, 4), progress_message=f"step {step}/{total}, loss {stats.get('loss', 0):.4f}"
            )
