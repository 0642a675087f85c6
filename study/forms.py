"""The owner's forms of the study console: the study's settings, a consent version, a survey, a question.

A question is edited field by field (no JSON to type): the form builds the definition `study.surveys
.clean_question` checks, and a refusal is shown by the field it names (`field_for`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from study.models import Question, Study
from study.surveys import CHOICE_KINDS

LINES_HELP = _("One option per line, in the order shown.")


def lines(value: str) -> list[str]:
    return [line.strip() for line in (value or "").replace("\r\n", "\n").split("\n") if line.strip()]


class StudyForm(forms.Form):
    enabled = forms.BooleanField(required=False, label=_("The study is on (consent, surveys and arms apply)"))
    languages = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                          label=_("Languages participants may choose"), choices=())
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, label=_("Assignment seed"))
    assignment = forms.ChoiceField(choices=Study.Assignment.choices, label=_("Assignment"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["languages"].choices = list(settings.LANGUAGES)


class ConsentForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 16}), label=_("Consent text (Markdown)"),
                           help_text=_("Saving a change publishes a new version: everyone agrees to it again before "
                                       "they continue."))


class SurveyForm(forms.Form):
    title = forms.CharField(required=False, max_length=200, label=_("Title"))
    intro = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}),
                            label=_("Introduction (Markdown)"))
    active = forms.BooleanField(required=False, label=_("Active (participants are asked)"))


class QuestionForm(forms.Form):
    key = forms.CharField(max_length=40, label=_("Key"),
                          help_text=_("The answer's column in exports: lower-case letters, digits, - and _."))
    kind = forms.ChoiceField(choices=Question.Kind.choices, label=_("Kind"))
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), label=_("Question"))
    choices = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}),
                              label=_("Options (choice questions) or scale labels (Likert)"), help_text=LINES_HELP)
    required = forms.BooleanField(required=False, initial=True, label=_("Required"))
    min = forms.CharField(required=False, max_length=30, label=_("Smallest number accepted"))
    max = forms.CharField(required=False, max_length=30, label=_("Largest number accepted"))
    integer = forms.BooleanField(required=False, label=_("Whole numbers only"))
    max_length = forms.CharField(required=False, max_length=10, label=_("Longest answer (characters, free text)"))
    eligible_choices = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), label=_("Eligible options"),
        help_text=_("Choice and Likert questions: the answers that let a person take part, one per line. Leave "
                    "empty for no rule."))
    eligible_any = forms.BooleanField(
        required=False, label=_("Multiple choice: one eligible option is enough"),
        help_text=_("Unticked: every option a person chooses must be eligible."))
    eligible_min = forms.CharField(required=False, max_length=30, label=_("Eligible from (number questions)"))
    eligible_max = forms.CharField(required=False, max_length=30, label=_("Eligible up to (number questions)"))

    # The definition's field (as study.surveys names it in a refusal) -> this form's field.
    FIELDS = {"key": "key", "kind": "kind", "text": "text", "choices": "choices", "required": "required",
              "settings.min": "min", "settings.max": "max", "settings.integer": "integer",
              "settings.max_length": "max_length", "eligibility.allowed": "eligible_choices",
              "eligibility.any_of": "eligible_choices", "eligibility.min": "eligible_min",
              "eligibility.max": "eligible_max", "eligibility": "eligible_choices"}

    def definition(self) -> dict[str, Any]:
        """The question as study.surveys.clean_question reads it (call after is_valid)."""
        data = self.cleaned_data
        kind = data["kind"]
        settings_: dict[str, Any] = {}
        rule: dict[str, Any] | None = None
        if kind == Question.Kind.NUMBER:
            settings_ = {"integer": data["integer"], **{b: data[b] for b in ("min", "max") if data[b].strip()}}
            bounds = {b: data[f"eligible_{b}"] for b in ("min", "max") if data[f"eligible_{b}"].strip()}
            rule = bounds or None
        elif kind == Question.Kind.TEXT:
            if data["max_length"].strip():
                settings_ = {"max_length": data["max_length"]}
        elif kind in CHOICE_KINDS:
            eligible = lines(data["eligible_choices"])
            if eligible:
                name = "any_of" if kind == Question.Kind.MULTIPLE and data["eligible_any"] else "allowed"
                rule = {name: eligible}
        return {"key": data["key"].strip(), "kind": kind, "text": data["text"],
                "choices": lines(data["choices"]) if kind in CHOICE_KINDS else [],
                "required": data["required"], "settings": settings_, "eligibility": rule}

    def field_for(self, name: str | None) -> str | None:
        """This form's field for a refusal's field name (e.g. "choices.2" -> "choices"); None: the whole form."""
        if not name:
            return None
        if name in self.FIELDS:
            return self.FIELDS[name]
        head = name.split(".")[0]
        if head in ("choices",):
            return "choices"
        for prefix, field in self.FIELDS.items():
            if name.startswith(prefix + "."):
                return field
        return None

    @classmethod
    def initial_for(cls, question: Question) -> dict[str, Any]:
        q_settings = question.settings or {}
        rule = question.eligibility or {}
        return {
            "key": question.key, "kind": question.kind, "text": question.text,
            "choices": "\n".join(str(c) for c in question.choices or []), "required": question.required,
            "min": q_settings.get("min", ""), "max": q_settings.get("max", ""),
            "integer": q_settings.get("integer", False), "max_length": q_settings.get("max_length", ""),
            "eligible_choices": "\n".join(rule.get("allowed", rule.get("any_of", []))),
            "eligible_any": "any_of" in rule,
            "eligible_min": rule.get("min", ""), "eligible_max": rule.get("max", ""),
        }
