"""Forms of the task pages: sign-up, and the owner's task creation, settings and import.
Configuration is validated by the task kind's own schema."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.utils.translation import gettext_lazy as _
from pydantic import ValidationError as PydanticError

from dynabench_site.parsers import loads_bounded
from dynabench_site.text import json_text_problem, validate_text
from tasks.importing import PRESETS
from tasks.kinds import get_kind, kind_choices
from tasks.kinds.base import check_encoder_setting
from tasks.models import LabeledItem, Task, pydantic_message


class SignupForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ["username", "email"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # One short line each, instead of Django's list of password rules (the rules still apply).
        self.fields["username"].help_text = "Shown on leaderboards. Letters, digits and @ . + - _ only."
        self.fields["email"].help_text = "Optional."
        self.fields["password1"].help_text = "At least 8 characters; not only digits, not a common password."
        self.fields["password2"].help_text = ""
        self.fields["username"].widget.attrs.update(autocomplete="username", autofocus=True)
        self.fields["username"].validators.append(validate_text)


CONFIG_MAX_DEPTH = 20  # a task's settings nest a few levels (crowd.pay); deeper is refused, never decoded


def parse_json_object(text: str, what: str) -> dict[str, Any]:
    """The JSON object of a settings field, or a form error naming it: bad JSON, NaN, or nested deeper than
    CONFIG_MAX_DEPTH (decoded by `loads_bounded`, so 3,000 `[` are refused, never a RecursionError)."""
    if not text.strip():
        return {}
    try:
        value = loads_bounded(text, CONFIG_MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(_("%(what)s is not valid JSON: %(error)s (line %(line)s, column %(column)s)") % {
            "what": what, "error": exc.msg, "line": exc.lineno, "column": exc.colno}) from None
    except ValueError as exc:  # too deep, NaN or Infinity
        raise forms.ValidationError(_("%(what)s cannot be accepted: %(error)s") % {"what": what, "error": exc}) from None
    if not isinstance(value, dict):
        raise forms.ValidationError(_("%(what)s must be a JSON object ({...})") % {"what": what})
    return value


def validated_config(kind: str, raw: dict[str, Any], task: Task | None = None) -> dict[str, Any]:
    found = json_text_problem(raw, "config")  # labels, instructions, every text in it: the one text rule
    if found is not None:
        raise forms.ValidationError(f"{found[0]}: {found[1]}")
    try:
        parsed = get_kind(kind).parse_config(raw)
    except PydanticError as exc:
        raise forms.ValidationError(_("The configuration does not fit the %(kind)s kind: %(error)s")
                                    % {"kind": kind, "error": pydantic_message(exc)}) from None
    problem = check_encoder_setting(parsed, task)  # the folders the site allows, the task's uploads
    if problem:
        raise forms.ValidationError(f"retraining.encoder: {problem}")
    return parsed.model_dump()


class TaskCreateForm(forms.Form):
    slug = forms.SlugField(max_length=64, label=_("Slug"), help_text=_("the task's address: letters, digits, - and _"))
    name = forms.CharField(max_length=200, validators=[validate_text], label=_("Name"))
    kind = forms.ChoiceField(choices=kind_choices, label=_("Kind"),
                             help_text=_("the preset: its defaults fill what the configuration leaves out"))
    visibility = forms.ChoiceField(choices=Task.Visibility.choices, initial=Task.Visibility.PUBLIC, label=_("Visibility"))
    config = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
                             label=_("Configuration (JSON, optional)"),
                             help_text=_("overrides of the kind's preset, e.g. {\"labels\": [...], \"instructions\": \"...\"}"))

    def clean_slug(self) -> str:
        slug = self.cleaned_data["slug"]
        if Task.objects.filter(slug=slug).exists():
            raise forms.ValidationError(_("a task with the slug %(slug)s exists already") % {"slug": repr(slug)})
        return slug

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if "kind" in data:
            try:
                raw = parse_json_object(data.get("config", ""), _("The configuration"))
                data["config"] = validated_config(data["kind"], raw)
            except forms.ValidationError as exc:
                self.add_error("config", exc)
        return data


class SettingsForm(forms.Form):
    name = forms.CharField(max_length=200, validators=[validate_text], label=_("Name"))
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 8}), validators=[validate_text],
                                   label=_("Instructions"),
                                   help_text=_("a short summary shown on the task page and above the write, validate and "
                                               "expert pages (Markdown); the full guidelines have their own page"))
    config = forms.CharField(widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"}),
                             label=_("Settings (JSON)"), help_text=_("every other setting of the task, checked by its kind"))

    def __init__(self, data=None, *args, task: Task, **kwargs):
        self.task = task
        if data is None and "initial" not in kwargs:  # unbound: show the task as it is
            config = dict(task.config)
            instructions = config.pop("instructions", "")
            kwargs["initial"] = {"name": task.name, "instructions": instructions,
                                 "config": json.dumps(config, indent=2, ensure_ascii=False)}
        super().__init__(data, *args, **kwargs)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        try:
            raw = parse_json_object(data.get("config", ""), _("The settings"))
            raw["instructions"] = data.get("instructions", "")
            data["config"] = validated_config(self.task.kind, raw, self.task)
        except forms.ValidationError as exc:
            self.add_error("config", exc)
        return data


class GuidelinesForm(forms.Form):
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 24}), label=_("Guidelines (Markdown)"), validators=[validate_text],
        help_text=_("what a good example is, with worked examples; saving a change publishes a new version, "
                    "which every writer and validator acknowledges before they continue"),
    )


class ImportForm(forms.Form):
    TARGETS = [("contexts", _("Contexts (what writers see)")), ("pool", _("Seed pool (labelled, train)")),
               ("eval", _("Evaluation data (labelled, dev or test)"))]

    file = forms.FileField(label=_("JSONL file"), help_text=_("one JSON object per line"))
    target = forms.ChoiceField(choices=TARGETS, label=_("Target"))
    collection = forms.SlugField(max_length=100, initial="base", label=_("Collection"),
                                 help_text=_("names the imported set, e.g. base or sst2"))
    split = forms.ChoiceField(choices=LabeledItem.Split.choices, initial=LabeledItem.Split.TRAIN, label=_("Split"),
                              help_text=_("for labelled data: train (the pool) or a test set"))
    preset = forms.ChoiceField(required=False, label=_("Preset"),
                               choices=[("", _("none: the task's own field names"))] + [(p, p) for p in PRESETS])
    skip_errors = forms.BooleanField(required=False, label=_("Skip errors"),
                                     help_text=_("import the good rows and report the bad ones"))
