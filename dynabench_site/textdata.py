"""The data check of the text rule: stored text that breaks it (rows written before the rule), and its repair.

Every model's CharField, TextField and JSONField is scanned generically (`django.apps.apps.get_models()`, so
this kernel module imports no app and a new app's fields are checked without a change here): each non-empty
text, and every text inside a JSON value (keys too), goes through `dynabench_site.text.text_problem`.
Left out: fields with choices (the site writes them) and MACHINE_FIELDS, diagnostics the site writes
itself (logs may hold terminal escapes; they are never shown as user text).

`repair_row` fixes what can be fixed without making anything up (`dynabench_site.text.repair`: surrogates and
noncharacters become U+FFFD, control and bidi characters are removed, mark stacks are cut); it retracts and
deletes nothing. A text with no visible character is left for a person to edit or retract. Run through
`manage.py check_text [--fix] [--fail]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.apps import apps
from django.db import models

from dynabench_site.text import json_text_problem, repair, repair_json, text_problem

MACHINE_FIELDS = frozenset({"log", "error", "scoring_error", "explanation_error", "progress_message", "password"})
CHUNK = 2000


@dataclass(frozen=True)
class Finding:
    model: type[models.Model]
    pk: object
    field: str  # the model field
    where: str  # the field, and inside a JSON value the path to the text (input.text)
    problem: str

    @property
    def label(self) -> str:
        return f"{self.model._meta.label} {self.pk}"

    def __str__(self) -> str:
        return f"{self.label} {self.where}: {self.problem}"


def text_fields(model: type[models.Model]) -> list[models.Field]:
    """The fields of `model` that can hold text people wrote."""
    return [
        f for f in model._meta.concrete_fields
        if isinstance(f, (models.CharField, models.TextField, models.JSONField))
        and not f.choices and f.name not in MACHINE_FIELDS and not f.primary_key
    ]


def value_problem(field: models.Field, value: object) -> tuple[str, str] | None:
    """(where, problem) for one stored value, None when it passes (empty and null values pass)."""
    if isinstance(field, models.JSONField):
        return json_text_problem(value, field.name)
    if isinstance(value, str) and value and (problem := text_problem(value)) is not None:
        return field.name, problem
    return None


def scan_model(model: type[models.Model]) -> Iterator[Finding]:
    fields = text_fields(model)
    if not fields:
        return
    names = [f.name for f in fields]
    rows = model._base_manager.order_by("pk").values_list("pk", *names)
    for pk, *values in rows.iterator(chunk_size=CHUNK):
        for field, value in zip(fields, values, strict=True):
            if (found := value_problem(field, value)) is not None:
                yield Finding(model, pk, field.name, *found)


def scan() -> Iterator[Finding]:
    """Every stored text that breaks the rule, model by model (in app order), row by row."""
    for model in apps.get_models():
        if model._meta.managed and not model._meta.proxy:
            yield from scan_model(model)


def repaired(field: models.Field, value: object) -> object:
    if isinstance(field, models.JSONField):
        return repair_json(value)
    return repair(value) if isinstance(value, str) else value


def repair_row(finding: Finding) -> tuple[bool, str | None]:
    """Repair the finding's field in its row: (whether it changed, the problem still left or None)."""
    model, field = finding.model, finding.model._meta.get_field(finding.field)
    current = model._base_manager.filter(pk=finding.pk).values_list(field.name, flat=True).first()
    new = repaired(field, current)
    changed = new != current
    if changed:
        model._base_manager.filter(pk=finding.pk).update(**{field.name: new})
    left = value_problem(field, new)
    return changed, left[1] if left else None
