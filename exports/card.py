"""The dataset card (README.md of a bundle): what is in it, how it was made, and how to use it."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.template.loader import render_to_string

from annotation.models import Assistance, Example
from exports.agreement import round_agreement
from exports.formats import get_format
from exports.schema import DESCRIPTIONS, ExportSchema
from exports.withdrawals import left_out, without_withdrawn
from tasks.models import Round
from validation.models import ReliabilityRun

MAX_LABELS = 50


@dataclass
class Stats:
    """Gathered while the files are written, so the card needs no second pass over the rows."""

    rows: Counter[str] = field(default_factory=Counter)
    labels: dict[str, Counter[str]] = field(default_factory=dict)
    validated: Counter[str] = field(default_factory=Counter)  # part -> rows whose label validators confirmed
    models: set[tuple[str, int]] = field(default_factory=set)
    assistance: Counter[str] = field(default_factory=Counter)  # provenance mode -> rows ("" = without)
    assistant_models: set[str] = field(default_factory=set)
    arms: Counter[str] = field(default_factory=Counter)  # study arm key -> rows ("" = none)
    languages: Counter[str] = field(default_factory=Counter)  # interface language -> rows ("" = not recorded)
    _model_sets: set[str] = field(default_factory=set)
    first: str | None = None
    last: str | None = None

    def add(self, part: str, records: list[dict[str, Any]]) -> None:
        self.rows[part] += len(records)
        labels = self.labels.setdefault(part, Counter())
        for record in records:
            labels[record["label"]] += 1
            if record["consensus"] == "verified":
                self.validated[part] += 1
            self._add_models(record)
            self.assistance[record.get("assistance") or ""] += 1
            if record.get("assistant_model"):
                self.assistant_models.add(record["assistant_model"])
            self.arms[record.get("arm") or ""] += 1
            self.languages[record.get("language") or ""] += 1
            created = record["created_at"]
            self.first = created if self.first is None or created < self.first else self.first
            self.last = created if self.last is None or created > self.last else self.last
        if len(labels) > 10 * MAX_LABELS:  # free-text answers (QA): keep the counter small
            self.labels[part] = Counter(dict(labels.most_common(MAX_LABELS)))

    def _add_models(self, record: dict[str, Any]) -> None:
        """Decode the predictions only of the first row of each set of model versions (rarely more than a few)."""
        versions = str(record["model_versions"])
        if versions in self._model_sets or len(self._model_sets) > 1000:
            return
        self._model_sets.add(versions)
        for prediction in record["model_predictions"] or []:
            name = str(prediction.get("name", "")) + (" — language model opponent, beside the ensemble"
                                                      if prediction.get("opponent") else "")
            self.models.add((name, int(prediction.get("model_version", 0))))


@dataclass
class CardInfo:
    round: Round
    version: str
    generated_at: datetime
    files: list[dict[str, Any]]
    stats: Stats
    held_back: int
    schema: ExportSchema


def _label_table(stats: Stats, parts: list[str]) -> tuple[list[str], list[list[int]]]:
    totals: Counter[str] = Counter()
    for part in parts:
        totals.update(stats.labels.get(part, Counter()))
    labels = [label for label, _ in totals.most_common(MAX_LABELS)]
    return labels, [[stats.labels.get(part, Counter())[label] for part in parts] for label in labels]


def render_card(info: CardInfo) -> str:
    task = info.round.task
    config = task.typed_config
    parts = [name for name in ("train", "dev", "test", "excluded") if name in info.stats.rows]
    labels, label_rows = _label_table(info.stats, parts)
    # Per format, the files that hold rows (a split without rows is named nowhere, so every load call below works
    # on every version, whatever split is empty). `datasets` reads one folder with one builder, so the card's
    # configuration (`load_dataset(<folder>)`) names one format: a typed one (Parquet) where the bundle has it,
    # else the first.
    loads = [{"format": fmt, "loader": get_format(fmt).datasets_loader, "flat": get_format(fmt).flat,
              "typed": get_format(fmt).typed,
              "files": [f for f in info.files if f["format"] == fmt and f["part"] != "excluded" and f["rows"]]}
             for fmt in dict.fromkeys(f["format"] for f in info.files)]
    loads = [load for load in loads if load["files"]]
    configured = next((load for load in loads if load["typed"]), loads[0] if loads else None)
    rows = info.stats.rows
    data_rows = sum(rows[part] for part in splits_of(parts))
    context = {
        "task": task,
        "round": info.round,
        "version": info.version,
        "generated_at": info.generated_at,
        "parts": parts,
        "counts": [(part, rows[part], info.stats.validated[part]) for part in parts],
        "empty_splits": [part for part in splits_of(parts) if not rows[part]],
        "data_rows": data_rows,
        "validated_rows": sum(info.stats.validated[part] for part in splits_of(parts)),
        "label_rows": list(zip(labels, label_rows, strict=True)),
        "per_label": task.kind_impl.target_is_label,
        "figures": without_withdrawn(Example.objects.filter(round=info.round), task).figures(),
        "agreement": round_agreement(info.round),
        "reliability_run": ReliabilityRun.objects.filter(task=task).first(),
        "models": sorted(info.stats.models),
        "assisted": sum(n for mode, n in info.stats.assistance.items() if mode),
        "assistance": [(label, info.stats.assistance.get(mode, 0)) for mode, label in Assistance.choices if mode],
        "assistant_models": sorted(info.stats.assistant_models),
        "first": info.stats.first,
        "last": info.stats.last,
        "held_back": info.held_back,
        **study_context(info),
        "licence": config.dataset.licence,
        "intended_use": config.dataset.intended_use,
        "splits": config.splits,
        "files": info.files,
        "loads": loads,
        "configured": configured,
        "yaml_features": "\n".join(info.schema.yaml(indent="  ")),
        "yaml_flat_features": "\n".join(info.schema.yaml(indent="  ", flat=True)),
        "schema_rows": [(name, kind, nested, DESCRIPTIONS.get(name, "")) for name, kind, nested in info.schema.rows()],
        "dropped": sorted(info.schema.dropped.keys.items()),
        "licence_json": json.dumps(config.dataset.licence),
        "name_json": json.dumps(f"{task.name} round {info.round.number}"),
    }
    return render_to_string("exports/dataset_card.md", context)


def study_context(info: CardInfo) -> dict[str, Any]:
    """The study's part of the card: its arms (rows per arm in this dataset), the consent versions, the languages
    the rows were written in, and how many examples of how many people are left out because they withdrew."""
    from study.models import Arm, Consent

    task = info.round.task
    arms = [{"key": arm.key, "name": arm.name, "model_in_loop": arm.model_in_loop, "assistant": arm.assistant,
             "ensemble": arm.ensemble_id, "rows": info.stats.arms.get(arm.key, 0)}
            for arm in Arm.objects.filter(task=task).order_by("position", "id")]
    consents = list(Consent.objects.filter(task=task).order_by("version").values("version", "created_at"))
    scored = Example.objects.filter(round=info.round, retracted=False, scoring_state=Example.Scoring.SCORED)
    withdrawn = left_out(scored, task)
    return {"arms": arms, "no_arm_rows": info.stats.arms.get("", 0), "consents": consents,
            "languages": sorted((lang, n) for lang, n in info.stats.languages.items() if lang),
            "no_language_rows": info.stats.languages.get("", 0),
            "withdrawn_examples": withdrawn.examples, "withdrawn_people": withdrawn.people}


def splits_of(parts: list[str]) -> list[str]:
    return [part for part in parts if part != "excluded"]
