"""Forms of the crowd pages. The rules are checked by the services; forms only parse."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from crowd.models import Quiz, WorkerBatch
from dynabench_site.text import add_text_rule, validate_text
from tasks import roles
from tasks.models import Task


class QuizSettingsForm(forms.Form):
    pass_mark = forms.FloatField(min_value=0.05, max_value=1, label=_("Pass mark"),
                                 help_text=_("the share of right answers that passes"))
    max_attempts = forms.IntegerField(min_value=1, max_value=20, label=_("Max attempts"))
    active = forms.BooleanField(required=False, label=_("Active"),
                                help_text=_("workers can take it (and must, where the task says so)"))


class QuizItemForm(forms.Form):
    """A question written by the owner: the task's context and input fields, and the known answer."""

    def __init__(self, *args, quiz: Quiz, **kwargs):
        super().__init__(*args, **kwargs)
        self.quiz = quiz
        config = quiz.task.typed_config
        for name in config.context_fields:
            self.fields[f"context_{name}"] = forms.CharField(label=_("Context: %(name)s") % {"name": name}, widget=forms.Textarea(attrs={"rows": 2}))
        for name in config.input_fields:
            self.fields[f"input_{name}"] = forms.CharField(label=_("Input: %(name)s") % {"name": name}, widget=forms.Textarea(attrs={"rows": 2}))
        labels = list(getattr(config, "labels", []) or [])
        if quiz.role == Quiz.Role.VALIDATOR:
            self.fields["proposed"] = _label_field(labels, _("Label shown to judge"))
            self.fields["answer"] = forms.ChoiceField(choices=[("correct", _("correct")), ("incorrect", _("incorrect"))],
                                                      label=_("Is that label right?"))
        else:
            self.fields["answer"] = _label_field(labels, _("The right label"))
        self.fields["explanation"] = forms.CharField(required=False, max_length=500, label=_("Why (optional)"))
        add_text_rule(*(f for f in self.fields.values() if isinstance(f, forms.CharField)))

    def item(self) -> dict[str, Any]:
        data = self.cleaned_data
        task, config = self.quiz.task, self.quiz.task.typed_config
        context = {n: data[f"context_{n}"] for n in config.context_fields}
        judged = self.quiz.role == Quiz.Role.VALIDATOR
        return {"context": context, "input": {n: data[f"input_{n}"] for n in config.input_fields},
                "answer": data["answer"] if judged else _answer(task, context, data["answer"]),
                "proposed": _answer(task, context, data["proposed"]) if judged else None,
                "explanation": data.get("explanation", "")}


def _label_field(labels: list[str], label: str) -> forms.Field:
    """A choice of the task's labels, or (QA) the answer text typed as it appears in the passage."""
    if labels:
        return forms.ChoiceField(choices=[(x, x) for x in labels], label=label)
    return forms.CharField(label=label, help_text=_("the answer text, exactly as in the passage"))


def _answer(task: Task, context: dict, value: str) -> Any:
    """A typed answer: a label, or for QA the span {text, start} found in the first context field."""
    if not task.kind_impl.answer_is_span:
        return value
    passage = str(next(iter(context.values()), ""))
    return {"text": value.strip(), "start": max(passage.find(value.strip()), 0)}


class AppointForm(forms.Form):
    username = forms.CharField(max_length=150, label=_("Username"))
    role = forms.ChoiceField(choices=[(roles.ANNOTATOR, _("Writer")), (roles.VALIDATOR, _("Validator")),
                                      (roles.EXPERT, _("Expert"))], label=_("Role"))


class SuspendForm(forms.Form):
    username = forms.CharField(max_length=150, label=_("Username"))
    reason = forms.CharField(max_length=500, validators=[validate_text], label=_("Reason"))


class BatchForm(forms.Form):
    name = forms.CharField(max_length=200, validators=[validate_text], label=_("Name"))
    source = forms.ChoiceField(choices=WorkerBatch.Source.choices, label=_("Source"))
    workers = forms.CharField(widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}), validators=[validate_text],
                              required=False, label=_("Workers"),
                              help_text=_("one worker per line: worker_id or worker_id,assignment_id (optional when the "
                                          "batch has places for its open link)"))
    places = forms.IntegerField(min_value=0, max_value=10000, initial=0, required=False, label=_("Places"),
                                help_text=_("how many participants the batch pays for: the open study link takes the "
                                            "places the listed workers leave (0: the listed workers only)"))
    hours = forms.IntegerField(min_value=1, max_value=24 * 90, initial=lambda: settings.CROWD_LINK_HOURS,
                               label=_("Hours"), help_text=_("how long the links stay valid"))
    end_rule = forms.ChoiceField(choices=WorkerBatch.EndRule.choices, initial=WorkerBatch.EndRule.EXAMPLES,
                                 required=False, label=_("End rule"),
                                 help_text=_("when a worker's work is done and they get the completion code (not "
                                             "given: after N examples, as before there was a choice)"))
    examples_required = forms.IntegerField(min_value=1, max_value=500, initial=3,
                                           label=_("Examples required"),
                                           help_text=_("N: examples a worker writes before getting the completion code"))
    minutes_required = forms.IntegerField(min_value=1, max_value=24 * 60, required=False,
                                          label=_("Minutes required"),
                                          help_text=_("M: minutes of work before the completion code (for the "
                                                      "minutes and whichever-first rules)"))
    time_limit_minutes = forms.IntegerField(min_value=1, max_value=24 * 60 * 90, required=False,
                                            label=_("Time limit minutes"),
                                            help_text=_("optional: a worker not finished this long after starting "
                                                        "times out and frees their place (match the platform's time "
                                                        "limit)"))
    completion_url = forms.CharField(required=False, max_length=500,
                                     label=_("Completion url"),
                                     help_text=_("optional: https://… with {code}, where the worker goes at the end "
                                                 "(Prolific: https://app.prolific.com/submissions/complete?cc={code})"))
    screen_out_url = forms.CharField(required=False, max_length=500,
                                     label=_("Screen out url"),
                                     help_text=_("optional: https://…, where an ineligible, declining or withdrawing "
                                                 "worker goes back, without a completion code (Prolific: the "
                                                 "screen-out or return address)"))
    study_id = forms.CharField(required=False, max_length=100,
                               label=_("Study id"),
                               help_text=_("optional: the platform's study id (Prolific STUDY_ID): checked on the open "
                                           "link, used to poll the platform"))

    def clean_places(self):
        return self.cleaned_data.get("places") or 0

    def clean_end_rule(self):
        return self.cleaned_data.get("end_rule") or WorkerBatch.EndRule.EXAMPLES


class PlatformForm(forms.Form):
    """The batch's settings the platform needs after creation: places, time limit, study id, addresses, secret."""

    places = forms.IntegerField(min_value=0, max_value=10000, label=_("Places"))
    time_limit_minutes = forms.IntegerField(min_value=1, max_value=24 * 60 * 90, required=False,
                                            label=_("Time limit minutes"))
    study_id = forms.CharField(required=False, max_length=100, label=_("Study id"))
    completion_url = forms.CharField(required=False, max_length=500, label=_("Completion url"))
    screen_out_url = forms.CharField(required=False, max_length=500, label=_("Screen out url"))
    webhook_secret = forms.CharField(required=False, max_length=200, strip=True, label=_("Webhook secret"),
                                     help_text=_("paste the platform's secret (Prolific makes one per workspace); "
                                                 "leave empty to keep the current one"))
    new_secret = forms.BooleanField(required=False, label=_("New secret"), help_text=_("make a new secret here instead"))
