"""Surveys before (`pre`) and after (`post`) the work: the owner's questions, each person's answers, eligibility.

Questions (`clean_question` checks an owner's definition, all or nothing, with a 400 naming the field):

* `single` (one of `choices`), `multiple` (a list of distinct `choices`), `likert` (one of `choices`: the scale's
  labels, in order), `number` (settings `min`, `max`, `integer`), `text` (settings `max_length`, the site's text
  rule);
* `required` or optional; an optional question may be left out (or sent empty);
* an eligibility rule, optional: `{"allowed": [choices...]}` for single and Likert (the answer is one of them) and
  multiple choice (every chosen option is one of them), `{"any_of": [choices...]}` for multiple choice (at least
  one chosen option is one of them), `{"min": x, "max": y}` (either or both) for a number. A question with a rule
  must be required (an empty answer cannot be judged).

Answers (`answer`): one response per person and survey, checked against the questions (400 naming `answers.<key>`
and why), stored with the language the person answered in. A pre-survey answer that breaks a rule makes the person
ineligible (SurveyResponse.eligible and Participant.eligible false): the study's gate stops them, politely, before
any work and before any pay is owed. The post-survey comes after the work (`post_survey_url`, asked by the crowd
platform's completion redirect).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from dynabench_site.errors import Conflict, InvalidInput, NotFound
from dynabench_site.text import text_problem
from study import consent, gate
from study.models import Question, Survey, SurveyResponse
from tasks import gates as work_gates
from tasks.gates import StepPending

PHASES = (Survey.Phase.PRE, Survey.Phase.POST)
KINDS = tuple(Question.Kind.values)
CHOICE_KINDS = (Question.Kind.SINGLE, Question.Kind.MULTIPLE, Question.Kind.LIKERT)
KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
MAX_QUESTIONS = 50
MAX_CHOICES = 30
MAX_CHOICE_CHARS = 200
MAX_QUESTION_CHARS = 2000
MAX_TITLE_CHARS = 200
MAX_INTRO_CHARS = 10_000
DEFAULT_TEXT_LENGTH = 2000
MAX_TEXT_LENGTH = 10_000
NUMBER_LIMIT = 10**12  # bounds of a number question's own min/max and of any answer
SETTINGS = {Question.Kind.NUMBER: {"min", "max", "integer"}, Question.Kind.TEXT: {"max_length"},
            Question.Kind.SINGLE: set(), Question.Kind.MULTIPLE: set(), Question.Kind.LIKERT: set()}
RULES = {Question.Kind.SINGLE: {"allowed"}, Question.Kind.LIKERT: {"allowed"},
         Question.Kind.MULTIPLE: {"allowed", "any_of"}, Question.Kind.NUMBER: {"min", "max"},
         Question.Kind.TEXT: set()}


def check_phase(phase: str) -> str:
    if phase not in PHASES:
        raise NotFound(_("There is no survey phase %(phase)s; the phases are pre and post.") % {"phase": phase[:20]})
    return phase


def survey(task, phase: str, *, active: bool = True) -> Survey | None:
    """The task's survey of `phase` (only an active one with questions, unless `active` is False)."""
    found = Survey.objects.filter(task=task, phase=check_phase(phase)).first()
    if found is None or not active:
        return found
    return found if found.active and found.questions.exists() else None


def response_of(user, survey_: Survey) -> SurveyResponse | None:
    if not getattr(user, "is_authenticated", False):
        return None
    return SurveyResponse.objects.filter(survey=survey_, user=user).first()


# --- the owner's questions -------------------------------------------------------------------------------------


def _number(value: Any, field: str, *, integer: bool = False) -> int | float:
    """A number as JSON or a form sends it (a numeric text from a form), finite and within NUMBER_LIMIT."""
    if isinstance(value, bool) or value is None:
        raise InvalidInput(_("must be a number"), field=field)
    if isinstance(value, str):
        try:
            parsed = Decimal(value.strip())
        except InvalidOperation:
            raise InvalidInput(_("must be a number"), field=field) from None
        if not parsed.is_finite():
            raise InvalidInput(_("must be a finite number"), field=field)
        if abs(parsed) > NUMBER_LIMIT:  # before any conversion: "1e999999999" is a finite Decimal
            raise InvalidInput(_("must be between %(lo)s and %(hi)s") % {"lo": -NUMBER_LIMIT, "hi": NUMBER_LIMIT},
                               field=field)
        value = int(parsed) if parsed == parsed.to_integral_value() else float(parsed)
    if not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)):
        raise InvalidInput(_("must be a number"), field=field)
    if abs(value) > NUMBER_LIMIT:
        raise InvalidInput(_("must be between %(lo)s and %(hi)s") % {"lo": -NUMBER_LIMIT, "hi": NUMBER_LIMIT},
                           field=field)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if integer and not isinstance(value, int):
        raise InvalidInput(_("must be a whole number"), field=field)
    return value


def _text(value: Any, field: str, limit: int, *, required: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(_("must be a text"), field=field)
    value = value.replace("\r\n", "\n").strip()
    if not value:
        if required:
            raise InvalidInput(_("must not be empty"), field=field)
        return ""
    if len(value) > limit:
        raise InvalidInput(_("is %(n)s characters long; the limit is %(limit)s") % {"n": len(value), "limit": limit},
                           field=field)
    problem = text_problem(value)
    if problem is not None:
        raise InvalidInput(problem, field=field)
    return value


def clean_question(data: Any, where: str = "") -> dict[str, Any]:
    """An owner's question, checked: the model fields of a Question (key, kind, text, choices, required, settings,
    eligibility). InvalidInput names the field (`where` prefixes it, e.g. "questions.2.")."""
    if not isinstance(data, dict):
        raise InvalidInput(_("must be an object with key, kind and text"), field=where.rstrip(".") or None)
    allowed = {"key", "kind", "text", "choices", "required", "settings", "eligibility"}
    unknown = sorted(str(k)[:40] for k in set(data) - allowed)
    if unknown:
        raise InvalidInput(_("is not a field of a question; the fields are: %(fields)s") % {
            "fields": ", ".join(sorted(allowed))}, field=f"{where}{unknown[0]}")
    key = data.get("key")
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise InvalidInput(_("must be 1 to 40 lower-case letters, digits, hyphens or underscores, starting with a "
                             "letter or digit (it names the answer's column in exports)"), field=f"{where}key")
    kind = data.get("kind")
    if kind not in KINDS:
        raise InvalidInput(_("must be one of: %(kinds)s") % {"kinds": ", ".join(KINDS)}, field=f"{where}kind")
    text = _text(data.get("text"), f"{where}text", MAX_QUESTION_CHARS)
    required = data.get("required", True)
    if not isinstance(required, bool):
        raise InvalidInput(_("must be true or false"), field=f"{where}required")

    choices = data.get("choices") or []
    if kind in CHOICE_KINDS:
        if not isinstance(choices, list) or not 2 <= len(choices) <= MAX_CHOICES:
            raise InvalidInput(_("needs a list of 2 to %(max)s options") % {"max": MAX_CHOICES},
                               field=f"{where}choices")
        choices = [_text(c, f"{where}choices.{i}", MAX_CHOICE_CHARS) for i, c in enumerate(choices)]
        if any("\n" in c for c in choices):
            raise InvalidInput(_("an option must be one line"), field=f"{where}choices")
        if len(set(choices)) != len(choices):
            raise InvalidInput(_("the options must differ from each other"), field=f"{where}choices")
    elif choices:
        raise InvalidInput(_("only choice and Likert questions have options"), field=f"{where}choices")

    settings = data.get("settings") or {}
    if not isinstance(settings, dict):
        raise InvalidInput(_("must be an object"), field=f"{where}settings")
    unknown = sorted(str(k)[:40] for k in set(settings) - SETTINGS[kind])
    if unknown:
        accepted = ", ".join(sorted(SETTINGS[kind])) or _("none")
        raise InvalidInput(_("is not a setting of a %(kind)s question (accepted: %(accepted)s)") % {
            "kind": kind, "accepted": accepted}, field=f"{where}settings.{unknown[0]}")
    cleaned_settings: dict[str, Any] = {}
    if kind == Question.Kind.NUMBER:
        integer = settings.get("integer", False)
        if not isinstance(integer, bool):
            raise InvalidInput(_("must be true or false"), field=f"{where}settings.integer")
        cleaned_settings["integer"] = integer
        for bound in ("min", "max"):
            if settings.get(bound) not in (None, ""):
                cleaned_settings[bound] = _number(settings[bound], f"{where}settings.{bound}", integer=integer)
        if "min" in cleaned_settings and "max" in cleaned_settings and cleaned_settings["min"] > cleaned_settings["max"]:
            raise InvalidInput(_("must not be above max"), field=f"{where}settings.min")
    if kind == Question.Kind.TEXT:
        length = settings.get("max_length", DEFAULT_TEXT_LENGTH)
        if length in (None, ""):
            length = DEFAULT_TEXT_LENGTH
        length = _number(length, f"{where}settings.max_length", integer=True)
        if not 1 <= length <= MAX_TEXT_LENGTH:
            raise InvalidInput(_("must be between 1 and %(max)s") % {"max": MAX_TEXT_LENGTH},
                               field=f"{where}settings.max_length")
        cleaned_settings["max_length"] = length

    rule = data.get("eligibility")
    if rule in (None, {}):
        rule = None
    else:
        rule = _clean_rule(rule, kind, choices, cleaned_settings, f"{where}eligibility")
        if not required:
            raise InvalidInput(_("a question with an eligibility rule must be required (an unanswered question "
                                 "cannot be judged)"), field=f"{where}required")
    return {"key": key, "kind": kind, "text": text, "choices": choices, "required": required,
            "settings": cleaned_settings, "eligibility": rule}


def _clean_rule(rule: Any, kind: str, choices: list[str], settings: dict, field: str) -> dict[str, Any]:
    if not isinstance(rule, dict):
        raise InvalidInput(_("must be an object (e.g. {\"allowed\": [...]} or {\"min\": 18})"), field=field)
    if not RULES[kind]:
        raise InvalidInput(_("a free-text question cannot have an eligibility rule"), field=field)
    unknown = sorted(str(k)[:40] for k in set(rule) - RULES[kind])
    if unknown:
        raise InvalidInput(_("is not a rule of a %(kind)s question (accepted: %(accepted)s)") % {
            "kind": kind, "accepted": ", ".join(sorted(RULES[kind]))}, field=f"{field}.{unknown[0]}")
    cleaned: dict[str, Any] = {}
    if kind in CHOICE_KINDS:
        for name in ("allowed", "any_of"):
            if name not in rule:
                continue
            values = rule[name]
            if not isinstance(values, list) or not values:
                raise InvalidInput(_("needs a non-empty list of the question's options"), field=f"{field}.{name}")
            strange = [str(v)[:40] for v in values if v not in choices]
            if strange:
                raise InvalidInput(_("%(value)s is not one of the question's options") % {"value": repr(strange[0])},
                                   field=f"{field}.{name}")
            cleaned[name] = [c for c in choices if c in values]  # in the question's order, once each
        if not cleaned:
            raise InvalidInput(_("needs %(names)s: the options that let a person take part") % {
                "names": " or ".join(sorted(RULES[kind]))}, field=field)
    else:
        for bound in ("min", "max"):
            if rule.get(bound) not in (None, ""):
                cleaned[bound] = _number(rule[bound], f"{field}.{bound}")
        if not cleaned:
            raise InvalidInput(_("needs min, max or both: the numbers that let a person take part"), field=field)
        if "min" in cleaned and "max" in cleaned and cleaned["min"] > cleaned["max"]:
            raise InvalidInput(_("must not be above max"), field=f"{field}.min")
    return cleaned


def questions(survey_: Survey) -> list[Question]:
    return list(survey_.questions.order_by("position", "id"))


@transaction.atomic
def configure(task, phase: str, *, title: Any = "", intro: Any = "", active: Any = True) -> Survey:
    """Make or update the task's survey of `phase` (title, introduction, active)."""
    check_phase(phase)
    if not isinstance(active, bool):
        raise InvalidInput(_("must be true or false"), field="active")
    title = _text(title, "title", MAX_TITLE_CHARS, required=False)
    if "\n" in title:
        raise InvalidInput(_("must be one line"), field="title")
    intro = _text(intro, "intro", MAX_INTRO_CHARS, required=False)
    found, _created = Survey.objects.update_or_create(task=task, phase=phase,
                                                      defaults={"title": title, "intro": intro, "active": active})
    return found


@transaction.atomic
def replace_questions(survey_: Survey, items: Any) -> list[Question]:
    """Replace the survey's questions by `items` (a list of question objects, in order), all checked first."""
    if not isinstance(items, list):
        raise InvalidInput(_("must be a list of questions"), field="questions")
    if len(items) > MAX_QUESTIONS:
        raise InvalidInput(_("at most %(max)s questions") % {"max": MAX_QUESTIONS}, field="questions")
    cleaned = [clean_question(item, f"questions.{i}.") for i, item in enumerate(items)]
    keys = [c["key"] for c in cleaned]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            raise InvalidInput(_("%(key)s is the key of an earlier question; keys must differ") % {"key": key},
                               field=f"questions.{i}.key")
    survey_.questions.all().delete()
    made = [Question.objects.create(survey=survey_, position=i, **c) for i, c in enumerate(cleaned)]
    survey_.save(update_fields=["updated_at"])
    return made


@transaction.atomic
def add_question(survey_: Survey, data: Any) -> Question:
    cleaned = clean_question(data)
    if survey_.questions.count() >= MAX_QUESTIONS:
        raise InvalidInput(_("at most %(max)s questions") % {"max": MAX_QUESTIONS}, field="key")
    if survey_.questions.filter(key=cleaned["key"]).exists():
        raise InvalidInput(_("another question of this survey has this key"), field="key")
    position = (survey_.questions.aggregate(p=Max("position"))["p"] or 0) + 1
    return Question.objects.create(survey=survey_, position=position, **cleaned)


@transaction.atomic
def update_question(question: Question, data: Any) -> Question:
    cleaned = clean_question(data)
    if question.survey.questions.filter(key=cleaned["key"]).exclude(pk=question.pk).exists():
        raise InvalidInput(_("another question of this survey has this key"), field="key")
    for name, value in cleaned.items():
        setattr(question, name, value)
    question.save()
    return question


@transaction.atomic
def delete_question(question: Question) -> None:
    question.delete()


@transaction.atomic
def move_question(question: Question, direction: str) -> None:
    """Move a question one place up or down (positions renumbered 0..n-1)."""
    if direction not in ("up", "down"):
        raise InvalidInput(_("must be up or down"), field="direction")
    ordered = questions(question.survey)
    i = next(n for n, q in enumerate(ordered) if q.pk == question.pk)
    j = i - 1 if direction == "up" else i + 1
    if 0 <= j < len(ordered):
        ordered[i], ordered[j] = ordered[j], ordered[i]
    for n, q in enumerate(ordered):
        if q.position != n:
            Question.objects.filter(pk=q.pk).update(position=n)
    question.survey.save(update_fields=["updated_at"])


def with_rule_text(q: Question) -> Question:
    """`q` with `rule_text`: its eligibility rule in words (for the owner's editor)."""
    rule = q.eligibility or {}
    parts = []
    if "allowed" in rule:
        parts.append(_("only: %(values)s") % {"values": ", ".join(rule["allowed"])})
    if "any_of" in rule:
        parts.append(_("at least one of: %(values)s") % {"values": ", ".join(rule["any_of"])})
    if "min" in rule:
        parts.append(_("at least %(min)s") % {"min": rule["min"]})
    if "max" in rule:
        parts.append(_("at most %(max)s") % {"max": rule["max"]})
    q.rule_text = "; ".join(parts)
    return q


def definition(q: Question) -> dict[str, Any]:
    """A question as the owner wrote it (the API's and the editor's shape)."""
    return {"key": q.key, "kind": q.kind, "text": q.text, "choices": list(q.choices or []), "required": q.required,
            "settings": dict(q.settings or {}), "eligibility": q.eligibility or None}


# --- the participant's answers ---------------------------------------------------------------------------------


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or (isinstance(value, str) and not value.strip())


def clean_answers(items: list[Question], data: Any) -> dict[str, Any]:
    """The person's answers, checked against the questions: question key -> answer (optional questions left
    empty are left out). InvalidInput names `answers.<key>` and says why."""
    if not isinstance(data, dict):
        raise InvalidInput(_("must be an object: question key -> answer"), field="answers")
    by_key = {q.key: q for q in items}
    unknown = sorted(str(k)[:40] for k in set(data) - set(by_key))
    if unknown:
        raise InvalidInput(_("is not a question of this survey"), field=f"answers.{unknown[0]}")
    cleaned: dict[str, Any] = {}
    for q in items:
        field = f"answers.{q.key}"
        value = data.get(q.key)
        if _empty(value):
            if q.required:
                raise InvalidInput(_("is required"), field=field)
            continue
        cleaned[q.key] = _clean_answer(q, value, field)
    return cleaned


def _clean_answer(q: Question, value: Any, field: str) -> Any:
    choices = list(q.choices or [])
    if q.kind in (Question.Kind.SINGLE, Question.Kind.LIKERT):
        if not isinstance(value, str) or value not in choices:
            raise InvalidInput(_("must be one of: %(choices)s") % {"choices": ", ".join(choices)}, field=field)
        return value
    if q.kind == Question.Kind.MULTIPLE:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidInput(_("must be a list of options"), field=field)
        strange = [v for v in value if v not in choices]
        if strange:
            raise InvalidInput(_("%(value)s is not one of: %(choices)s") % {
                "value": repr(strange[0][:40]), "choices": ", ".join(choices)}, field=field)
        if len(set(value)) != len(value):
            raise InvalidInput(_("names an option twice"), field=field)
        return [c for c in choices if c in value]  # in the question's order
    if q.kind == Question.Kind.NUMBER:
        settings = q.settings or {}
        number = _number(value, field, integer=bool(settings.get("integer")))
        if settings.get("min") is not None and number < settings["min"]:
            raise InvalidInput(_("must be at least %(min)s") % {"min": settings["min"]}, field=field)
        if settings.get("max") is not None and number > settings["max"]:
            raise InvalidInput(_("must be at most %(max)s") % {"max": settings["max"]}, field=field)
        return number
    limit = int((q.settings or {}).get("max_length") or DEFAULT_TEXT_LENGTH)
    return _text(value, field, limit)


def eligible(items: list[Question], answers: dict[str, Any]) -> bool:
    """Whether the answers pass every question's eligibility rule."""
    for q in items:
        rule = q.eligibility
        if not rule:
            continue
        value = answers.get(q.key)
        if value is None:
            return False
        if q.kind == Question.Kind.MULTIPLE:
            chosen = set(value)
            if "allowed" in rule and not chosen <= set(rule["allowed"]):
                return False
            if "any_of" in rule and not chosen & set(rule["any_of"]):
                return False
        elif q.kind in (Question.Kind.SINGLE, Question.Kind.LIKERT):
            if value not in rule.get("allowed", []):
                return False
        elif q.kind == Question.Kind.NUMBER and (("min" in rule and value < rule["min"])
                                                 or ("max" in rule and value > rule["max"])):
            return False
    return True


def has_rules(items: list[Question]) -> bool:
    return any(q.eligibility for q in items)


@transaction.atomic
def answer(user, task, phase: str, data: Any) -> SurveyResponse:
    """Store `user`'s answers to the task's active survey of `phase` (once). The consent comes first (409
    `consent` while it is pending); a pre-survey answer that breaks a rule makes the person ineligible."""
    found = survey(task, phase)
    if found is None:
        raise NotFound(_("This task has no %(phase)s-survey to answer.") % {"phase": phase})
    study = gate.facts(task)
    if study is not None:
        # The pre-survey comes after the consent; the post-survey after every step before the work.
        step = (gate.first_step_before_surveys(user, task, study) if phase == Survey.Phase.PRE
                else work_gates.pending(user, task))
        if step is not None:
            raise StepPending(step)
    if SurveyResponse.objects.filter(survey=found, user=user).exists():
        raise Conflict(_("You have already answered this survey."))
    items = questions(found)
    cleaned = clean_answers(items, data)
    ok = eligible(items, cleaned) if phase == Survey.Phase.PRE else True
    lang = consent.language()
    response = SurveyResponse.objects.create(survey=found, user=user, answers=cleaned, eligible=ok, language=lang)
    participant = consent.join(user, task, lang)
    if phase == Survey.Phase.PRE and has_rules(items) and participant.eligible is not False:
        participant.eligible = ok
        participant.save(update_fields=["eligible"])
    return response


def post_survey_url(user, task, next_url: str | None = None) -> str | None:
    """The post-survey page for `user` (carrying `next`, a same-site path, to go on to afterwards), or None when
    the task has no active post-survey or the person answered it already. The crowd platform's completion redirect
    asks this first."""
    found = survey(task, Survey.Phase.POST)
    if found is None or not getattr(user, "is_authenticated", False) or response_of(user, found) is not None:
        return None
    if next_url and not safe_next(next_url):
        next_url = None
    return gate.with_next(gate.step_url("study-survey", task, phase=Survey.Phase.POST), next_url)


def safe_next(target: str | None, host: str | None = None) -> str | None:
    """`target` when it is a path on this site ("/..."; never another host or scheme), else None."""
    if not target or not isinstance(target, str) or not target.startswith("/") or target.startswith("//"):
        return None
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={host} if host else set()):
        return None
    return target
