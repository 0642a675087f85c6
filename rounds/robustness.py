"""Robustness and fairness of every model and ensemble on every test set, from a perturbed copy kept per set.

The copy (`perturbed_copy`): each row of the test set (a stable sample of `MAX_ROWS` for a larger set) under each
family of `rounds.perturbations`, keeping only the rows the family changed; made once and kept as JSON under
VAR_DIR/perturbed/<task slug>/<content hash>.json, the hash covering the set's rows (inputs, targets, keys), the
sample size and the perturbations' version: the same set is never perturbed twice, and a set whose rows change
gets a new copy.

The measures (Dynaboard, Ma et al. 2021: the share of predictions that do not change), for a model or ensemble:
- robustness: over the rows the noise families (typos, keyboard, OCR, case) changed, pooled, the share whose
  prediction is the one on the original row;
- fairness: the same over the rows the name and gender-term swaps changed.
Each with its Wilson 95 % interval (`modelzoo.intervals.share_interval`; the pooled rows are not independent —
one test row appears in up to four noise copies — so the interval is somewhat narrower than it should be), stored
with the set's metrics: Evaluation.metrics (a model) or EnsembleScore.metrics (a round's ensemble) get
"robustness", "fairness", "intervals" {"robustness", "fairness": [low, high]} and "perturbations" (the copy's hash
and, per family, the rows changed, those unchanged in prediction, their share and interval). A measure with no
changed row is left out (a set with no names: no fairness). A pair measured on the same copy is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from modelzoo import intervals, opponent
from modelzoo.models import EnsembleScore, Evaluation, ModelVersion
from rounds import perturbations
from tasks.models import Task
from zoo.aggregation import get_strategy
from zoo.data import LabelledSet
from zoo.heads import get_head
from zoo.recipes import stable_fraction
from zoo.types import BackendError

Log = Callable[[str], None]
MAX_ROWS = 2000  # rows of a test set perturbed (a stable sample of a larger set, chosen by the rows' keys)


def perturbed_dir(task: Task) -> Path:
    return Path(settings.VAR_DIR) / "perturbed" / task.slug


def content_hash(labelled: LabelledSet) -> str:
    blob = json.dumps([perturbations.VERSION, MAX_ROWS, labelled.inputs, labelled.targets, labelled.keys],
                      sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _row_key(labelled: LabelledSet, i: int) -> str:
    if i < len(labelled.keys) and labelled.keys[i]:
        return str(labelled.keys[i])
    return hashlib.sha1(json.dumps(labelled.inputs[i], sort_keys=True).encode()).hexdigest()


@dataclass
class Copy:
    """A test set's perturbed copy: per family, the rows it changed ({"i": row, "input", "target", "table"})."""

    hash: str
    path: Path
    size: int
    sampled: int
    families: dict[str, list[dict[str, Any]]]

    def labelled(self, family: str, dataset: str) -> LabelledSet:
        """One family's changed rows as a set the prediction cache can hold beside the original's."""
        out = LabelledSet(name=f"{dataset}~{family}@{self.hash[:12]}")
        for row in self.families.get(family, []):
            out.add(row["input"], row["target"], f"{row['i']}")
        return out


def sample(labelled: LabelledSet) -> list[int]:
    n = len(labelled.inputs)
    if n <= MAX_ROWS:
        return list(range(n))
    ranked = sorted(range(n), key=lambda i: stable_fraction(f"sample:{_row_key(labelled, i)}"))
    return sorted(ranked[:MAX_ROWS])


def perturbed_copy(task: Task, labelled: LabelledSet, log: Log = print, digest: str | None = None) -> Copy | None:
    """The kept copy of `labelled` (made now when there is none), or None for a kind with no perturbations.
    `digest`: the set's `content_hash`, when the caller has it already."""
    fields = perturbations.fields_for(task.kind_impl, task.typed_config)
    if fields is None or not labelled.inputs:
        return None
    digest = digest or content_hash(labelled)
    path = perturbed_dir(task) / f"{digest}.json"
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        return Copy(digest, path, data["size"], data["sampled"], data["families"])
    rows = sample(labelled)
    families: dict[str, list[dict[str, Any]]] = {}
    for family in perturbations.FAMILIES:
        changed = []
        for i in rows:
            out = perturbations.perturb_row(family, fields, labelled.inputs[i], labelled.targets[i],
                                            _row_key(labelled, i))
            if out is not None:
                changed.append({"i": i, "input": out.input, "target": out.target, "table": out.table})
        families[family] = changed
    data = {"version": perturbations.VERSION, "task": task.slug, "dataset": labelled.name, "size": len(labelled.inputs),
            "sampled": len(rows), "fields": {"noise": fields.noise, "swaps": fields.swaps},
            "libraries": perturbations.LIBRARY, "families": families}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)  # whole or not at all: a reader never sees half a copy
    log(f"perturbed copy of {labelled.name} ({len(rows)} rows): "
        + ", ".join(f"{f} {len(r)}" for f, r in families.items()) + f" changed; kept as {path}")
    return Copy(digest, path, len(labelled.inputs), len(rows), families)


def summary(copy: Copy, agreement: dict[str, list[bool]]) -> dict[str, Any]:
    """The metrics to store from per-family agreement (a bool per changed row: the prediction did not change)."""
    families: dict[str, Any] = {}
    pooled: dict[str, list[int]] = {"robustness": [0, 0], "fairness": [0, 0]}
    for family, same in agreement.items():
        n, kept = len(same), sum(same)
        families[family] = {"measure": perturbations.MEASURE[family], "library": perturbations.LIBRARY[family],
                            "changed": n, "unchanged": kept, "share": round(kept / n, 4) if n else None,
                            "interval": intervals.share_interval(kept / n, n) if n else None}
        pooled[perturbations.MEASURE[family]][0] += kept
        pooled[perturbations.MEASURE[family]][1] += n
    out: dict[str, Any] = {"perturbations": {"copy": copy.hash, "version": perturbations.VERSION,
                                             "sampled": copy.sampled, "size": copy.size, "families": families}}
    spans: dict[str, list[float]] = {}
    for measure, (kept, n) in pooled.items():
        out["perturbations"][f"{measure}_rows"] = n
        if n:
            out[measure] = round(kept / n, 4)
            spans[measure] = intervals.share_interval(kept / n, n)
    out["intervals"] = spans
    return out


def _merge(metrics: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    merged = {k: v for k, v in metrics.items() if k not in ("robustness", "fairness", "perturbations")}
    spans = {k: v for k, v in (metrics.get("intervals") or {}).items() if k not in ("robustness", "fairness")}
    merged.update({k: v for k, v in measured.items() if k != "intervals"})
    merged["intervals"] = {**spans, **measured["intervals"]}
    return merged


def _measured_on(metrics: dict[str, Any], digest: str) -> bool:
    return (metrics.get("perturbations") or {}).get("copy") == digest


def measure(task: Task, labelled: LabelledSet, versions: Sequence[ModelVersion],
            ensembles: dict[int, list[ModelVersion]], cache: Any, log: Log = print, force: bool = False) -> int:
    """Robustness and fairness of each of `versions` (those with an Evaluation on `labelled`) and each round's
    ensemble (those with an EnsembleScore of the same members) on `labelled`, stored with those metrics; pairs
    measured on the same copy are skipped unless `force`. Original predictions come from `cache` (a
    `rounds.evaluation.PredictionCache`, shared with the scoring); perturbed ones from a cache of their own, whose
    timings are not recorded: the throughput stays the original sets'. The copy is read (or made) only when some
    pair needs measuring. Returns how many models and ensembles were measured."""
    if perturbations.fields_for(task.kind_impl, task.typed_config) is None or not labelled.inputs:
        return 0
    digest = content_hash(labelled)
    head = task.kind_impl.head
    evaluations = {e.model_version_id: e for e in Evaluation.objects.filter(
        model_version__in=versions, dataset=labelled.name)}
    todo = [v for v in versions if v.pk in evaluations and (force or not _measured_on(evaluations[v.pk].metrics, digest))]
    scores = {s.round_number: s for s in EnsembleScore.objects.filter(task=task, dataset=labelled.name)}
    todo_ensembles = {n: m for n, m in ensembles.items() if m and n in scores and scores[n].members == [v.pk for v in m]
                      and (force or not _measured_on(scores[n].metrics, digest))}
    needed = list({v.pk: v for v in [*todo, *(v for m in todo_ensembles.values() for v in m)]}.values())
    if not needed:
        return 0
    copy = perturbed_copy(task, labelled, log, digest)
    if copy is None:
        return 0
    perturbed_cache = type(cache)()  # a PredictionCache of their own (rounds.evaluation imports this module)
    sets = {f: copy.labelled(f, labelled.name) for f in perturbations.FAMILIES}
    tables = {f: [row["table"] for row in copy.families.get(f, [])] for f in perturbations.FAMILIES}
    index = {f: [row["i"] for row in copy.families.get(f, [])] for f in perturbations.FAMILIES}
    for family_set in sets.values():
        if family_set.inputs:
            perturbed_cache.prefetch(needed, family_set)
    cache.prefetch(needed, labelled)

    def predictions(version: ModelVersion) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
        original = cache.get(version, labelled)
        return original, {f: perturbed_cache.get(version, s) if s.inputs else [] for f, s in sets.items()}

    def agreement(original: list[dict[str, Any]], perturbed: dict[str, list[dict[str, Any]]]) -> dict[str, list[bool]]:
        return {f: [perturbations.same_prediction(head, original[i], p, t)
                    for i, p, t in zip(index[f], perturbed[f], tables[f], strict=True)] for f in sets}

    done, per_model = 0, {}
    for version in needed:
        try:
            per_model[version.pk] = predictions(version)
        except BackendError as exc:
            if not opponent.is_llm(version):
                raise
            log(f"{version.name} on {labelled.name}: robustness not measured now ({exc.message})")
    for version in todo:
        if version.pk not in per_model:
            continue
        measured = summary(copy, agreement(*per_model[version.pk]))
        evaluation = evaluations[version.pk]
        evaluation.metrics = _merge(evaluation.metrics, measured)
        evaluation.save(update_fields=["metrics"])
        log(f"{version.name} on {labelled.name}: {_fmt(measured)}")
        done += 1
    for number, members in sorted(todo_ensembles.items()):
        if any(v.pk not in per_model for v in members):
            continue
        aggregate = get_strategy(get_head(members[0].head).default_strategy)
        runs = [per_model[v.pk] for v in members]
        original = [aggregate([r[0][i] for r in runs]) for i in range(len(labelled.inputs))]
        perturbed = {f: [aggregate([r[1][f][j] for r in runs]) for j in range(len(index[f]))] for f in sets}
        measured = summary(copy, agreement(original, perturbed))
        score = scores[number]
        score.metrics = _merge(score.metrics, measured)
        score.save(update_fields=["metrics"])
        log(f"round {number} ensemble on {labelled.name}: {_fmt(measured)}")
        done += 1
    return done


def _fmt(measured: dict[str, Any]) -> str:
    parts = []
    for name in ("robustness", "fairness"):
        if name in measured:
            low, high = measured["intervals"][name]
            parts.append(f"{name} {measured[name]:.3f} [{low:.3f}, {high:.3f}] "
                         f"({measured['perturbations'][f'{name}_rows']} rows)")
        else:
            parts.append(f"{name}: no row changed")
    return ", ".join(parts)


def table(task: Task) -> list[dict[str, Any]]:
    """The stored measures of a task, one row per model or ensemble and test set (the command's report)."""
    rows = []
    for e in Evaluation.objects.filter(model_version__task=task).select_related("model_version").order_by(
            "dataset", "model_version__version"):
        if "perturbations" in e.metrics:
            rows.append({"dataset": e.dataset, "model": e.model_version.name, **_row(e.metrics)})
    for s in EnsembleScore.objects.filter(task=task).order_by("dataset", "round_number"):
        if "perturbations" in s.metrics:
            rows.append({"dataset": s.dataset, "model": f"round {s.round_number} ensemble", **_row(s.metrics)})
    return rows


def _row(metrics: dict[str, Any]) -> dict[str, Any]:
    detail, spans = metrics["perturbations"], metrics.get("intervals") or {}
    return {"robustness": metrics.get("robustness"), "robustness_interval": spans.get("robustness"),
            "robustness_rows": detail.get("robustness_rows", 0), "fairness": metrics.get("fairness"),
            "fairness_interval": spans.get("fairness"), "fairness_rows": detail.get("fairness_rows", 0),
            "sampled": detail.get("sampled"), "families": detail.get("families", {})}
