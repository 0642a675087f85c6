"""The task settings as a form generated from the task kind's configuration schema.

The kind's pydantic `config_class` gives a JSON schema; every leaf of a simple type (text, number, integer,
yes/no, a choice, a list of names) becomes a form field with the schema's bounds, grouped by the nested
setting it belongs to (validation, splits, crowd, ...). On save, the form's values are laid over the task's
stored configuration (so a setting the form cannot show, e.g. `model_context_fields`, is kept) and the whole
is validated by the kind, the one judge of a configuration; its errors are put on the fields they name.
Settings the form does not show stay editable as JSON (the page's "advanced" form, `forms.SettingsForm`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _
from pydantic import ValidationError as PydanticError

from dynabench_site.text import validate_text
from tasks.kinds.base import check_encoder_setting
from tasks.models import Task

# Headings and help for the settings people meet first; anything else gets its schema title and description.
GROUPS = {
    "": (_("Writing"), _("What writers see and may send.")),
    "validation": (_("Validation"), _("How many people check each example before it counts.")),
    "splits": (_("Dataset splits"), _("How verified examples are shared between train, dev and test (ratios add up to 1).")),
    "dataset": (_("Dataset card"), _("What the published datasets say about themselves.")),
    "dynascore": (_("Dynascore weights"), _("How the leaderboard weighs each measure.")),
    "crowd": (_("Crowd"), _("Who qualifies, and how validators are checked (docs/crowd.md).")),
    "crowd.pay": (_("Pay"), _("The rates of the pay report.")),
}
HELP = {
    "instructions": _("A short summary in Markdown, shown on the task page and above the write, validate and expert pages; "
                    "the full guidelines have their own page."),
    "labels": _("One label per line."),
    "context_fields": _("The fields of a context writers see, one per line (lower-case names)."),
    "input_fields": _("The fields a writer fills in, one per line (lower-case names)."),
    "max_input_chars": _("The longest text a writer may send in one field."),
    "sampling": _("Which context a writer gets next."),
    "submission_rate": _("Submissions per writer, e.g. 30/min."),
    "explanation_method": _("How the verdict's word map is made: occlusion (the drop in the models' confidence when a "
                          "word is removed, over all models) or a gradient method (faster on long passages, less faithful)."),
    "f1_threshold": _("The model is fooled when its answer overlaps the writer's with a word-level F1 below this."),
    "max_answer_chars": _("The longest answer span a writer may highlight."),
    "validation.scope": _("Validate only the examples that fooled the model, or every example."),
    "validation.mode": _("A fixed quorum, or fewer votes when the first ones agree."),
    "validation.quorum": _("Votes needed to decide an example."),
    "validation.adaptive_min": _("Agreeing votes that decide an example at once (adaptive mode)."),
    "validation.lease_seconds": _("How long an example stays reserved for the validator who got it."),
    "validation.continue_after_close": _("Keep validating a round's examples after it closes."),
    "validation.guidance": _("How validators judge an example (Markdown), shown on the validate and expert pages and the "
                           "validator quiz. Empty: a default wording for the task's kind."),
    "splits.seed": _("Changes which examples fall in which split (stored splits never move)."),
    "crowd.writers_need_quiz": _("Writers must pass the writer quiz on this task."),
    "crowd.validators_need_quiz": _("Every validator must pass the validator quiz (new sign-ups always do)."),
    "crowd.gold_rate": _("The share of served items that are gold (0 to 1)."),
    "crowd.gold_min_answers": _("Gold answers before a validator's accuracy counts."),
    "crowd.gold_min_accuracy": _("The accuracy a validator keeps to stay in the queue (0 to 1)."),
    "crowd.same_ip_rule": _("Also link accounts by sign-up address (turn off for a crowd behind one address)."),
}
WIDE = {"instructions", "dataset.intended_use", "validation.guidance"}
NAME_SEPARATOR = "__"  # form field names: "validation__quorum" (a valid HTML id and CSS selector)


@dataclass
class Group:
    key: str
    title: str
    help: str
    names: list[str] = field(default_factory=list)  # the form's field names, in schema order


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return schema["$defs"][ref.rsplit("/", 1)[-1]] if ref else node


def _simple(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if "enum" in node or kind in ("string", "integer", "number", "boolean"):
        return True
    return kind == "array" and node.get("items", {}).get("type") == "string"


def _label(key: str) -> str:
    return key.replace("_", " ").capitalize()


def form_field(path: str, node: dict[str, Any]) -> forms.Field:
    """A Django field for one leaf of the schema, with its bounds."""
    key = path.rsplit(".", 1)[-1]
    common = {"label": _label(key), "help_text": HELP.get(path, node.get("description", ""))}
    if "enum" in node:
        return forms.ChoiceField(choices=[(v, str(v).replace("_", " ")) for v in node["enum"]], **common)
    kind = node.get("type")
    if kind == "boolean":
        return forms.BooleanField(required=False, **common)
    bounds = {"min_value": node.get("minimum", node.get("exclusiveMinimum")), "max_value": node.get("maximum")}
    if kind == "integer":
        return forms.IntegerField(**bounds, **common)
    if kind == "number":
        return forms.FloatField(**bounds, widget=forms.NumberInput(attrs={"step": "any"}), **common)
    if kind == "array":
        return forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
                               validators=[validate_text], **common)
    widget = forms.Textarea(attrs={"rows": 5 if key in ("instructions", "guidance") else 3}) if path in WIDE else None
    return forms.CharField(required=False, max_length=node.get("maxLength"), strip=True, widget=widget,
                           validators=[validate_text], **common)


def walk(schema: dict[str, Any]) -> tuple[dict[str, tuple[str, dict[str, Any]]], list[Group], list[str]]:
    """The schema's leaves: {form name: (dotted path, schema node)}, the groups in order, and the dotted paths
    of settings the form cannot show (left to the JSON form)."""
    leaves: dict[str, tuple[str, dict[str, Any]]] = {}
    groups: list[Group] = []
    skipped: list[str] = []

    def visit(node: dict[str, Any], prefix: str) -> None:
        title, help_text = GROUPS.get(prefix, (_label(prefix.rsplit(".", 1)[-1]), node.get("description", "")))
        group = Group(prefix, title, help_text)
        groups.append(group)
        nested = []
        for key, child in node.get("properties", {}).items():
            path = f"{prefix}.{key}" if prefix else key
            child = _resolve(schema, child)
            if child.get("type") == "object" and "properties" in child:
                nested.append((child, path))
            elif _simple(child):
                name = path.replace(".", NAME_SEPARATOR)
                leaves[name] = (path, child)
                group.names.append(name)
            else:
                skipped.append(path)
        for child, path in nested:
            visit(child, path)

    visit(schema, "")
    return leaves, [g for g in groups if g.names], skipped


def _get(config: dict[str, Any], path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _set(config: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        config = config.setdefault(part, {})
    config[last] = value


class ConfigForm(forms.Form):
    """The task's name and every simple setting of its kind, grouped; validated by the kind on save."""

    name = forms.CharField(max_length=200, label=_("Task name"), validators=[validate_text])

    def __init__(self, data=None, *args, task: Task, **kwargs):
        self.task = task
        self.leaves, self.groups, self.advanced_only = walk(task.kind_impl.config_class.model_json_schema())
        current = task.typed_config.model_dump()
        initial = {"name": task.name}
        for name, (path, node) in self.leaves.items():
            value = _get(current, path)
            initial[name] = "\n".join(value) if node.get("type") == "array" and value is not None else value
        super().__init__(data, *args, initial=initial, **kwargs)
        for name, (path, node) in self.leaves.items():
            self.fields[name] = form_field(path, node)

    def grouped(self) -> list[dict[str, Any]]:
        """The groups with their bound fields, for the template."""
        return [{"key": g.key or "writing", "title": g.title, "help": g.help,
                 "fields": [self[name] for name in g.names]} for g in self.groups]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        config = copy.deepcopy(self.task.config)
        for name, (path, node) in self.leaves.items():
            value = data.get(name)
            if node.get("type") == "array":
                value = [line.strip() for line in (value or "").splitlines() if line.strip()]
            _set(config, path, value)
        try:
            parsed = self.task.kind_impl.parse_config(config)
        except PydanticError as exc:
            self._place_errors(exc)
            return data
        data["config"] = parsed.model_dump()
        problem = check_encoder_setting(parsed, self.task)  # the folders the site allows, the task's uploads
        if problem:
            name = NAME_SEPARATOR.join(("retraining", "encoder"))
            self.add_error(name if name in self.fields else None, problem)
        return data

    def _place_errors(self, exc: PydanticError) -> None:
        """Each of the kind's complaints on the field it names; a rule over several fields (e.g. the split
        ratios) on the form, with its group's title."""
        for error in exc.errors(include_url=False):
            path = ".".join(str(p) for p in error["loc"] if not isinstance(p, int))
            message = str(error["msg"]).removeprefix("Value error, ")
            name = path.replace(".", NAME_SEPARATOR)
            if name in self.fields:
                self.add_error(name, message)
            else:
                title = GROUPS.get(path, (_label(path),))[0] if path else _("Settings")
                self.add_error(None, f"{title}: {message}")

    def error_list(self) -> list[dict[str, str]]:
        """Every error, first to last, with the field it points at (for the summary at the top)."""
        out = [{"id": "", "label": "", "message": str(m)} for m in self.non_field_errors()]
        for name, form_field_ in self.fields.items():
            for message in self.errors.get(name, []):
                out.append({"id": self[name].id_for_label, "label": form_field_.label, "message": message})
        return out
