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

**Held out, and earning its row** (issue 39). A fitted opponent is scored at once on rows it was never fitted on
(`judge`: the held-out rows its caller gives — a round's test split, or the task's imported held-out slice or test
items, `held_out_rows`), and the figure is kept on the version: its accuracy with a 95 % Wilson interval, and the
share of the set's commonest label (what always answering that label scores). An opponent that does not beat that
share by `MIN_MARGIN` on at least `MIN_HELD_OUT` rows is left out of verdicts (`current` skips it; it is still
evaluated and ranked on the leaderboard, which says why). One with fewer held-out rows, or none, joins verdicts
and its row says it could not be judged. Every row it shows — beside a verdict (`verdict_entry`), on the
leaderboard (`standing`) — carries that figure and says that it decides nothing: the example's verdict is the
ensemble's alone.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from modelzoo import data, intervals
from modelzoo.llm import provider_for
from modelzoo.models import Evaluation, ModelMeasurement, ModelVersion
from tasks.kinds import decide
from zoo.data import LabelledSet
from zoo.llm.base import ProviderError
from zoo.llm.opponent import LLMClassifier, accuracy, fit_offsets

log = logging.getLogger(__name__)

KIND = "llm_opponent"  # hyperparameters["kind"] of an opponent's model version
# Opponent calls run here, so a verdict waits at most the task's timeout for them (a provider's own timeouts are
# longer: they bound one HTTP call, not the verdict).
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="llm-opponent")

# An opponent joins verdicts only if, on held-out rows, its accuracy beats the share of the set's commonest label
# (what always answering that label scores) by this much. 5 points: the packaged 135M model measured 8.4 points
# over that share on binary SST-2 dev (0.593 vs 0.509) and 5.2 on SNLI (docs/llm-opponent.md), so a fitted
# opponent that is a real classifier passes and one that mostly repeats one label (the sentiment demo's: "positive"
# at 46-64 % for 10 of 11 plain examples, issue 39) does not.
MIN_MARGIN = 0.05
# Fewer held-out rows than this, and the figure cannot judge it (the 95 % interval is wider than +/-10 points):
# the same line as the rounds' smallest test set that decides anything (rounds.datasets.MIN_TEST_SIZE).
MIN_HELD_OUT = 100
HELD_OUT_MAX = 300  # at most this many held-out rows are scored (one provider call each), a stable sample
BEATS, FALLS_SHORT, TOO_FEW, NOT_JUDGED = "beats", "falls short", "too few rows", "not judged"
SET_NAMES = {"*/heldout": "the base held-out slice", "*/test": "the base test set"}
NEVER_DECIDES = "It never changes the verdict: the ensemble's decides; this row is shown for comparison."


class NoOpponent(ValueError):
    """The task cannot have an opponent (its kind answers spans), or the settings are incomplete."""


def is_llm(version: ModelVersion) -> bool:
    return (version.hyperparameters or {}).get("kind") == KIND


def check_kind(task) -> None:
    if not task.kind_impl.target_is_label:
        raise NoOpponent(f"task {task.slug!r} is {task.kind}: a language model opponent scores label words, and "
                         f"this kind answers with a span of the context; it has no opponent")


def versions(task) -> list[ModelVersion]:
    """The task's ready language-model versions, newest first (none when the task turns the opponent off)."""
    if not task.typed_config.opponent.enabled or not task.kind_impl.target_is_label:
        return []
    return list(ModelVersion.objects.filter(task=task, hyperparameters__kind=KIND,
                                            status__in=[ModelVersion.Status.READY, ModelVersion.Status.DEPLOYED])
                .order_by("-version"))


def latest(task) -> ModelVersion | None:
    """The newest opponent version, whether or not it earned its place in verdicts (evaluation, the leaderboard)."""
    found = versions(task)
    return found[0] if found else None


def current(task) -> ModelVersion | None:
    """The task's opponent in verdicts: its newest ready language-model version that did not fall short of the
    commonest label on held-out rows (`judge`), when the task turns the opponent on."""
    return next((v for v in versions(task) if held_out_of(v).get("verdict") != FALLS_SHORT), None)


def held_out_of(version: ModelVersion) -> dict[str, Any]:
    return ((version.hyperparameters or {}).get("llm") or {}).get("held_out") or {}


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
    row: dict[str, Any] = {"model_version": version.pk, "name": version.name, "opponent": True, "decides": False,
                           "held_out": summary(version), "note": NEVER_DECIDES}
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
    fooled = decide(task, target, prediction).fooled  # the verdict seam, on this model's answer alone
    return {**row, "prediction": prediction, "fooled": fooled, "seconds": round(time.perf_counter() - started, 3)}


def _why(exc: ProviderError) -> str:
    return {"down": "its language model does not answer", "timeout": "its language model was too slow",
            "quota": "its language model is over its quota"}.get(exc.kind, exc.message[:200])


def summary(version: ModelVersion) -> str:
    """One sentence: the opponent's held-out figure, against the commonest label's share, and what it means."""
    record = held_out_of(version)
    verdict = record.get("verdict")
    if not record or verdict == NOT_JUDGED:
        return "Not evaluated on held-out data (the task has none): how often it is right is unknown."
    where = f"{record['size']} rows of {set_name(record['dataset'])}"
    figure = (f"Held-out accuracy {_pct(record['accuracy'])} (95 % interval {_pct(record['low'])}–"
              f"{_pct(record['high'])}) on {where}; always answering “{record['majority_label']}” scores "
              f"{_pct(record['majority'])}")
    if verdict == TOO_FEW:
        return f"{figure}: too few rows to judge it (fewer than {MIN_HELD_OUT})."
    if verdict == FALLS_SHORT:
        return f"{figure}: it does not beat that by {MIN_MARGIN * 100:g} points, so it is left out of verdicts."
    return f"{figure}."


def set_name(dataset: str) -> str:
    if dataset.startswith("round-"):
        number, _, split = dataset.removeprefix("round-").partition("/")
        return f"round {number}'s {split.split(' ')[0] or 'test'} split"
    base = dataset.split(" (a sample")[0]
    return SET_NAMES.get(base, dataset) + (" (a sample)" if base != dataset else "")


def _pct(value: float) -> str:
    return f"{100 * float(value):.0f} %"


def standing(version: ModelVersion) -> dict[str, Any]:
    """What the leaderboard says about an opponent: its held-out figure, whether it joins verdicts, and that it
    never decides one."""
    in_use = current(version.task)
    return {"held_out": held_out_of(version) or None, "summary": summary(version),
            "in_verdicts": in_use is not None and in_use.pk == version.pk, "decides": False, "note": NEVER_DECIDES}


# --- held out: does it earn its row ----------------------------------------------------------------------


def _fraction(key: str) -> float:
    return int(hashlib.sha256(f"opponent-held-out:{key}".encode()).hexdigest()[:12], 16) / 16 ** 12


def sample(rows: LabelledSet, limit: int = HELD_OUT_MAX) -> LabelledSet:
    """At most `limit` rows of `rows`, a stable sample (the name says so when it is one)."""
    if len(rows.inputs) <= limit:
        return rows
    chosen = sorted(sorted(range(len(rows.keys)), key=lambda i: _fraction(rows.keys[i]))[:limit])
    out = LabelledSet(f"{rows.name} (a sample of {limit})")
    for i in chosen:
        out.add(rows.inputs[i], rows.targets[i], rows.keys[i])
    return out


def held_out_rows(task, limit: int = HELD_OUT_MAX) -> LabelledSet | None:
    """Imported rows an opponent is never fitted on (a fit reads train rows or a round's dev split): the larger of
    the task's held-out slice ("*/heldout", imported train rows held out at import) and its imported test items
    ("*/test"); None when it has neither. The rounds' test splits are the pipeline's to give (fit_llm_opponent)."""
    found = [data.load(task, name) for name in ("*/heldout", "*/test")]
    found = [rows for rows in found if rows.inputs]
    if not found:
        return None
    return sample(max(found, key=lambda rows: len(rows.inputs)), limit)


def judge(version: ModelVersion, rows: LabelledSet | None) -> dict[str, Any]:
    """Score the opponent on held-out `rows` (never the rows its offsets were fitted on), store the Evaluation and
    the verdict on the version: "beats" (the commonest label's share by MIN_MARGIN, on MIN_HELD_OUT rows or more),
    "falls short" (left out of verdicts), "too few rows", or "not judged" (no rows). Raises ProviderError."""
    task = version.task
    if rows is None or not rows.inputs:
        record: dict[str, Any] = {"verdict": NOT_JUDGED}
    else:
        kind, config = task.kind_impl, task.typed_config
        started = time.perf_counter()
        predictions = predict(version, rows.inputs)
        seconds = time.perf_counter() - started
        metrics = intervals.with_intervals(kind, config, rows.targets, predictions,
                                           kind.evaluate(config, rows.targets, predictions))
        n = len(rows.inputs)
        label, count = Counter(kind.target_label(t) for t in rows.targets).most_common(1)[0]
        majority, accuracy_ = count / n, float(metrics["accuracy"])
        low, high = metrics["intervals"]["accuracy"]
        verdict = TOO_FEW if n < MIN_HELD_OUT else BEATS if accuracy_ >= majority + MIN_MARGIN - 1e-9 else FALLS_SHORT
        record = {"dataset": rows.name, "size": n, "accuracy": round(accuracy_, 4), "low": low, "high": high,
                  "majority": round(majority, 4), "majority_label": label, "margin": MIN_MARGIN, "verdict": verdict}
        Evaluation.objects.update_or_create(model_version=version, dataset=rows.name,
                                            defaults={"size": n, "metrics": {**metrics, "majority": round(majority, 4)}})
        ModelMeasurement.objects.update_or_create(
            model_version=version, defaults={"examples": n, "seconds": round(seconds, 4),
                                             "throughput": round(n / max(seconds, 1e-9), 2),
                                             "memory_mb": memory_mb(version)})
        log.info("LLM opponent %s on %s (%d rows): accuracy %.3f [%.3f, %.3f], commonest label %.3f: %s", version.pk,
                 rows.name, n, accuracy_, low, high, majority, verdict)
    hyperparameters = dict(version.hyperparameters)
    hyperparameters["llm"] = {**hyperparameters["llm"], "held_out": record}
    ModelVersion.objects.filter(pk=version.pk).update(hyperparameters=hyperparameters)
    version.hyperparameters = hyperparameters
    return record


# --- fitting ---------------------------------------------------------------------------------------------


def fit(task, rows: LabelledSet, dataset: str, max_rows: int = 300,
        held_out: LabelledSet | None = None) -> ModelVersion:
    """A new opponent version for the task from its `opponent` settings, its offsets fitted on `rows` (a dev split:
    never a test split), with an Evaluation on them before and after the offsets, then judged on `held_out` rows
    (`judge`: never the fitting rows; None: not judged)."""
    check_kind(task)
    config = task.typed_config
    labels = list(config.labels)
    inputs, targets = rows.inputs[:max_rows], rows.targets[:max_rows]
    overlap = set(rows.keys[:max_rows]) & set(held_out.keys) if held_out is not None else set()
    if overlap:
        raise NoOpponent(f"{len(overlap)} held-out row(s) are among the rows the offsets would be fitted on")
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
    judge(version, held_out)
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
