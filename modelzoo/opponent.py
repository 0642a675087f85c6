"""A language model as an opponent (docs/llm-opponent.md): a `ModelVersion` whose predictions come from a provider.

Its label is the label word the model finds most likely after a prompt made of the task's instructions and the
example's fields (`zoo.llm.opponent.LLMClassifier`), plus per-label offsets fitted on a dev split (`fit`). It is a
model version like any other for evaluation (`predict`, called by `modelzoo.services.predict_with`): every round's
test split scores it, and the leaderboard ranks it. It is never a member of an ensemble (`deploy_ensemble`
refuses it) and never reaches a serving backend: scoring asks it beside the ensemble (`verdict_entry`), with its
own "fooled" flag, and leaves it out of that verdict, saying why, when it fails or is slower than the task's
`opponent.timeout_s`.

Only labelled kinds have one (sentiment, NLI, hate speech, configured classification): extractive QA answers a
span, which no label word can score.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from modelzoo.llm import provider_for
from modelzoo.models import Evaluation, ModelMeasurement, ModelVersion
from zoo.data import LabelledSet
from zoo.llm.base import ProviderError
from zoo.llm.opponent import LLMClassifier, accuracy, fit_offsets

log = logging.getLogger(__name__)

KIND = "llm_opponent"  # hyperparameters["kind"] of an opponent's model version
# Opponent calls run here, so a verdict waits at most the task's timeout for them (a provider's own timeouts are
# longer: they bound one HTTP call, not the verdict).
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="llm-opponent")


class NoOpponent(ValueError):
    """The task cannot have an opponent (its kind answers spans), or the settings are incomplete."""


def is_llm(version: ModelVersion) -> bool:
    return (version.hyperparameters or {}).get("kind") == KIND


def check_kind(task) -> None:
    if not task.kind_impl.target_is_label:
        raise NoOpponent(f"task {task.slug!r} is {task.kind}: a language model opponent scores label words, and "
                         f"this kind answers with a span of the context; it has no opponent")


def current(task) -> ModelVersion | None:
    """The task's opponent: its newest ready language-model version, when the task turns the opponent on."""
    if not task.typed_config.opponent.enabled or not task.kind_impl.target_is_label:
        return None
    return (ModelVersion.objects.filter(task=task, hyperparameters__kind=KIND,
                                        status__in=[ModelVersion.Status.READY, ModelVersion.Status.DEPLOYED])
            .order_by("-version").first())


def field_names(task) -> tuple[str, str]:
    """How the prompt names the two texts: the task's own field names (premise / hypothesis)."""
    config = task.typed_config
    fed = list(getattr(config, "fed_context_fields", None) or []) + list(config.input_fields)
    names = [name.replace("_", " ").capitalize() for name in fed] or ["Text"]
    return (names[0], names[1] if len(names) > 1 else "Second text")


def classifier_for(version: ModelVersion) -> LLMClassifier:
    from tasks.kinds.base import LLMProviderSettings

    spec = version.hyperparameters["llm"]
    provider = provider_for(LLMProviderSettings.model_validate(spec["provider"]))
    return LLMClassifier(provider, spec["labels"], instructions=spec.get("instructions", ""),
                         label_words=spec.get("label_words") or {}, offsets=spec.get("offsets") or {},
                         field_names=tuple(spec.get("field_names") or ("Text", "Second text")))


def predict(version: ModelVersion, model_inputs: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Predictions in the encoder classifiers' format ({"label", "probs"}); ProviderError when it cannot answer."""
    return classifier_for(version).predict(model_inputs)


# --- beside a verdict ------------------------------------------------------------------------------------


def verdict_entry(task, model_input: dict[str, str], target: Any,
                  version: ModelVersion | None = None) -> dict[str, Any] | None:
    """The opponent's row of a verdict's per-model table (None: the task has no opponent). Never raises, and
    never waits longer than the task's `opponent.timeout_s`: a slow or failing opponent is left out, with the
    reason. `fooled` is the opponent's own (the example's verdict stays the ensemble's). `version`: the
    opponent already looked up (`current`), e.g. once for a batch of verdicts."""
    version = version if version is not None else current(task)
    if version is None:
        return None
    timeout = float(task.typed_config.opponent.timeout_s)
    row: dict[str, Any] = {"model_version": version.pk, "name": version.name, "opponent": True}
    started = time.perf_counter()
    future = _pool.submit(predict, version, [model_input])
    try:
        prediction = future.result(timeout=timeout)[0]
    except FutureTimeout:
        future.cancel()
        log.warning("LLM opponent %s: no answer within %.1f s; left out of this verdict", version.pk, timeout)
        return {**row, "prediction": None, "left_out": f"no answer within {timeout:g} s"}
    except ProviderError as exc:
        log.warning("LLM opponent %s left out: %s (%s)", version.pk, exc, exc.kind)
        return {**row, "prediction": None, "left_out": _why(exc)}
    except Exception as exc:  # noqa: BLE001 - an opponent never fails a verdict
        log.exception("LLM opponent %s failed", version.pk)
        return {**row, "prediction": None, "left_out": f"it failed ({type(exc).__name__})"}
    fooled = task.kind_impl.is_fooled(task.typed_config, target, prediction)
    return {**row, "prediction": prediction, "fooled": fooled, "seconds": round(time.perf_counter() - started, 3)}


def _why(exc: ProviderError) -> str:
    return {"down": "its language model does not answer", "timeout": "its language model was too slow",
            "quota": "its language model is over its quota"}.get(exc.kind, exc.message[:200])


# --- fitting ---------------------------------------------------------------------------------------------


def fit(task, rows: LabelledSet, dataset: str, max_rows: int = 300) -> ModelVersion:
    """A new opponent version for the task from its `opponent` settings, its offsets fitted on `rows` (a dev split:
    never a test split), with an Evaluation on them before and after the offsets."""
    check_kind(task)
    config = task.typed_config
    labels = list(config.labels)
    inputs, targets = rows.inputs[:max_rows], rows.targets[:max_rows]
    if len(inputs) < len(labels):
        raise NoOpponent(f"{dataset!r} has {len(inputs)} row(s); fitting the offsets needs at least {len(labels)}")
    provider_settings = config.opponent.provider.model_dump()
    spec = {"provider": provider_settings, "labels": labels, "label_words": dict(config.opponent.label_words),
            "instructions": config.instructions or task.description, "field_names": list(field_names(task))}
    unfitted = LLMClassifier(provider_for(config.opponent.provider), labels, spec["instructions"],
                             spec["label_words"], field_names=spec["field_names"])
    started = time.perf_counter()
    raw = unfitted.raw_scores(inputs)
    seconds = time.perf_counter() - started
    gold = [task.kind_impl.target_label(t) for t in targets]
    offsets = fit_offsets(raw, gold, labels)
    before, after = accuracy(raw, gold, {}, labels), accuracy(raw, gold, offsets, labels)
    spec.update(offsets=offsets, describe=unfitted.provider.describe(),
                fitted_on={"dataset": dataset, "size": len(inputs), "accuracy_before": round(before, 4),
                           "accuracy_after": round(after, 4)})
    version = _create(task, f"{unfitted.provider.model.split(' (')[0]} opponent (LLM)",
                      {"kind": KIND, "llm": spec})
    Evaluation.objects.update_or_create(model_version=version, dataset=f"{dataset} (offsets fitted here)",
                                        defaults={"size": len(inputs), "metrics": {"accuracy": round(after, 4),
                                                                                   "accuracy_before_offsets": round(before, 4)}})
    ModelMeasurement.objects.update_or_create(
        model_version=version, defaults={"examples": len(inputs), "seconds": round(seconds, 4),
                                         "throughput": round(len(inputs) / max(seconds, 1e-9), 2),
                                         "memory_mb": memory_mb(version)})
    log.info("LLM opponent %s for %s: offsets %s fitted on %s (%d rows): accuracy %.3f -> %.3f", version.pk,
             task.slug, offsets, dataset, len(inputs), before, after)
    return version


def memory_mb(version: ModelVersion) -> float:
    """The weights a local opponent holds in memory (its GGUF file, mapped); 0 for a model behind HTTP."""
    provider = (version.hyperparameters.get("llm") or {}).get("provider") or {}
    if provider.get("provider") != "local":
        return 0.0
    from django.conf import settings

    from zoo.llm.local import packaged_file

    try:
        path = settings.LLM_LOCAL_PATH or packaged_file()
        from pathlib import Path

        return round(Path(path).stat().st_size / 1e6, 2)
    except (ProviderError, OSError):
        return 0.0


def _create(task, name: str, hyperparameters: dict[str, Any]) -> ModelVersion:
    for _ in range(5):  # the unique constraint settles a race for the next number
        number = (ModelVersion.objects.filter(task=task).aggregate(n=Max("version"))["n"] or 0) + 1
        try:
            with transaction.atomic():
                return ModelVersion.objects.create(
                    task=task, version=number, name=name, head="classification", artifact="",
                    status=ModelVersion.Status.READY, hyperparameters=hyperparameters, progress=1.0,
                    progress_message="offsets fitted", lineage={"fitted_on": hyperparameters["llm"]["fitted_on"]})
        except IntegrityError:
            continue
    raise RuntimeError(f"could not allocate a model version number for {task.slug}")
