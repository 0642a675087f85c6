"""A task's texts in the reader's language: the owner's translations (study.models.TextTranslation).

The owner writes a task's texts once, in the site's language (settings.LANGUAGE_CODE: English), and may translate
each into the other interface languages (settings.LANGUAGES) on the translations page (study.text_views). People
read a text in their language (the one the language chooser set: `django.utils.translation.get_language()`)
where a translation exists, else as written. The rules:

* `field` names the text (`fields(task)` lists them, each with its source): `instructions`, `guidelines`,
  `consent`, `survey:<phase>:title`, `survey:<phase>:intro`, `question:<phase>:<key>`,
  `question:<phase>:<key>:choices` (a JSON list, as long as the question's own list), `label:<label>` (a label's
  display name: the label itself stays the stored value; only what people read changes), `field:<name>` (the
  name the create page shows for a context or input field).
* A translation of a versioned text (guidelines, consent) that is older than the text's current version is not
  shown: people read the current version as written until the owner translates it again (the page says which
  translations are out of date). Nobody agrees to, or is held to, rules translated from an older version.
* Every translation passes the site's text rule (dynabench_site.text) and a length limit; an empty one removes it.

`text(task, field, default, language=None)` is the one lookup; `label_names`, `question_choices` and
`survey_texts` read several in one query. Pages below the study app (tasks' templates) read translations through
`tasks.texts.text`, which this module provides (registered in StudyConfig.ready).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _

from dynabench_site.errors import InvalidInput
from dynabench_site.text import text_problem
from study.models import Consent, Question, Survey, TextTranslation

MAX_CHARS = 20_000  # one translated text (guidelines and consent texts are the long ones)
MAX_LABEL_CHARS = 100  # a label's display name
VERSIONED = ("guidelines", "consent")


def source_language() -> str:
    """The language the owner writes the task's texts in: the site's (settings.LANGUAGE_CODE, base code)."""
    return settings.LANGUAGE_CODE.split("-")[0].lower()


def languages() -> dict[str, str]:
    """The interface's languages, code -> name (settings.LANGUAGES)."""
    return {code: name for code, name in settings.LANGUAGES}


def target_languages() -> dict[str, str]:
    """The languages a task's texts may be translated into: every interface language but the source."""
    return {code: name for code, name in languages().items() if code != source_language()}


def language_code(language: str | None = None) -> str:
    """`language` (default: the active one), as one of settings.LANGUAGES' codes ("ar-eg" -> "ar"); the source
    language when it is none of them."""
    code = (language or translation.get_language() or "").lower()
    known = languages()
    if code in known:
        return code
    base = code.split("-")[0]
    return base if base in known else source_language()


def is_rtl(language: str | None = None) -> bool:
    return translation.get_language_info(language_code(language))["bidi"]


# --- lookups ------------------------------------------------------------------------------------------------


def _stored(task, language: str, fields: list[str] | None = None) -> dict[str, TextTranslation]:
    rows = TextTranslation.objects.filter(task=task, language=language)
    if fields is not None:
        rows = rows.filter(field__in=fields)
    return {row.field: row for row in rows}


def _source_times(task) -> dict[str, Any]:
    """When each versioned text's current version was written (its translation must be newer to be shown)."""
    times = {}
    guidelines = task.guidelines.order_by("-version").only("created_at").first()
    if guidelines is not None:
        times["guidelines"] = guidelines.created_at
    consent = Consent.objects.filter(task=task).order_by("-version").only("created_at").first()
    if consent is not None:
        times["consent"] = consent.created_at
    return times


def _current(task, rows: dict[str, TextTranslation]) -> dict[str, str]:
    """The rows' texts, less the out-of-date translations of versioned texts."""
    times = _source_times(task) if any(f in rows for f in VERSIONED) else {}
    return {field: row.text for field, row in rows.items()
            if row.text and not (field in times and row.updated_at < times[field])}


def text(task, field: str, default: str, language: str | None = None) -> str:
    """The task's text `field` in `language` (default: the active language): the owner's translation where one
    exists and is current, else `default` (the text as written)."""
    code = language_code(language)
    if code == source_language() or task is None or getattr(task, "pk", None) is None:
        return default
    found = _current(task, _stored(task, code, [field])).get(field)
    return found if found else default


def texts(task, fields: list[str], language: str | None = None) -> dict[str, str]:
    """Several of the task's translated texts at once (only those translated and current), field -> text."""
    code = language_code(language)
    if code == source_language() or not fields:
        return {}
    return _current(task, _stored(task, code, list(fields)))


def label_names(task, labels: list[str] | None = None, language: str | None = None) -> dict[str, str]:
    """Each label's display name in `language`: label -> name (the label itself where untranslated)."""
    labels = list(labels if labels is not None else getattr(task.typed_config, "labels", []) or [])
    found = texts(task, [f"label:{label}" for label in labels], language)
    return {label: found.get(f"label:{label}", label) for label in labels}


def question_choices(question: Question, language: str | None = None) -> list[str]:
    """A question's choices as people read them (the stored answers stay the choices as written)."""
    raw = text(question.survey.task, f"question:{question.survey.phase}:{question.key}:choices", "", language)
    return _choices(question.choices, raw)


def _choices(choices: list | None, raw: str | None) -> list[str]:
    """The choices as written, each replaced by its translation when `raw` is a JSON list as long as they are."""
    written = [str(c) for c in (choices or [])]
    try:
        shown = json.loads(raw) if raw else None
    except ValueError:
        shown = None
    if not isinstance(shown, list) or len(shown) != len(written):
        return written
    return [str(s) or c for s, c in zip(shown, written, strict=True)]


def survey_texts(survey: Survey, language: str | None = None) -> dict[str, Any]:
    """A survey as people read it: title, intro and, per question key, its text and its choices (one query)."""
    phase = survey.phase
    questions = list(survey.questions.all())
    fields = [f"survey:{phase}:title", f"survey:{phase}:intro"]
    for q in questions:
        fields += [f"question:{phase}:{q.key}", f"question:{phase}:{q.key}:choices"]
    found = texts(survey.task, fields, language)
    shown_questions = {}
    for q in questions:
        choices = _choices(q.choices, found.get(f"question:{phase}:{q.key}:choices"))
        shown_questions[q.key] = {"text": found.get(f"question:{phase}:{q.key}", q.text), "choices": choices}
    return {"title": found.get(f"survey:{phase}:title", survey.title),
            "intro": found.get(f"survey:{phase}:intro", survey.intro), "questions": shown_questions}


def consent_text(consent: Consent, language: str | None = None) -> str:
    """A consent version's text in `language` (the translation only while `consent` is the current version and
    the translation was saved after it)."""
    code = language_code(language)
    if code == source_language():
        return consent.text
    row = TextTranslation.objects.filter(task_id=consent.task_id, language=code, field="consent").first()
    latest = Consent.objects.filter(task_id=consent.task_id).order_by("-version").values_list("pk", flat=True).first()
    if row is None or not row.text or latest != consent.pk or row.updated_at < consent.created_at:
        return consent.text
    return row.text


# --- what an owner translates ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    key: str  # the TextTranslation field
    group: str  # where it shows, for the page's sections
    label: str  # what the page calls it
    source: str  # the text as written (choices: one per line)
    multiline: bool = True
    markdown: bool = False
    choices: int = 0  # a choices field: how many lines the translation must have


def fields(task) -> list[Field]:
    """Every text of the task an owner may translate, with its source text, in page order."""
    config = task.typed_config
    found = [Field("instructions", "task", _("Instructions"), config.instructions or "", markdown=True)]
    guidelines = task.guidelines.order_by("-version").first()
    if guidelines is not None:
        name = _("Guidelines (version %(version)s)") % {"version": guidelines.version}
        found.append(Field("guidelines", "task", name, guidelines.text, markdown=True))
    consent = Consent.objects.filter(task=task).order_by("-version").first()
    if consent is not None:
        name = _("Consent (version %(version)s)") % {"version": consent.version}
        found.append(Field("consent", "consent", name, consent.text, markdown=True))
    for survey in Survey.objects.filter(task=task).prefetch_related("questions").order_by("phase"):
        phase = survey.phase
        group = f"survey:{phase}"
        found.append(Field(f"survey:{phase}:title", group, _("Title"), survey.title, multiline=False))
        found.append(Field(f"survey:{phase}:intro", group, _("Introduction"), survey.intro, markdown=True))
        for q in survey.questions.all():
            found.append(Field(f"question:{phase}:{q.key}", group, _("Question “%(key)s”") % {"key": q.key}, q.text))
            if q.choices:
                name = _("Choices of “%(key)s” (one a line)") % {"key": q.key}
                found.append(Field(f"question:{phase}:{q.key}:choices", group, name,
                                   "\n".join(str(c) for c in q.choices), choices=len(q.choices)))
    for label in getattr(config, "labels", []) or []:
        found.append(Field(f"label:{label}", "labels", _("Label “%(label)s”") % {"label": label}, label, multiline=False))
    for name in dict.fromkeys([*config.context_fields, *config.input_fields]):  # the names of the create page's fields
        found.append(Field(f"field:{name}", "labels", _("Field “%(name)s”") % {"name": name}, name.capitalize(),
                           multiline=False))
    return found


def check_language(language: str) -> str:
    if language not in target_languages():
        raise InvalidInput(f"{language!r} is not a language this site translates into; choose one of: "
                           f"{', '.join(target_languages())}", field="language")
    return language


def stored_value(field: Field, value: Any) -> str:
    """A translation as it is stored (choices: a JSON list), or InvalidInput naming the field and what is wrong."""
    if not isinstance(value, str):
        raise InvalidInput("must be a string", field=field.key)
    value = value.replace("\r\n", "\n").strip()
    if not value:
        return ""
    problem = text_problem(value)
    if problem is not None:
        raise InvalidInput(problem, field=field.key)
    limit = MAX_LABEL_CHARS if field.key.startswith(("label:", "field:")) else MAX_CHARS
    if len(value) > limit:
        raise InvalidInput(f"is {len(value)} characters long; the limit is {limit}", field=field.key)
    if not field.multiline and "\n" in value:
        raise InvalidInput("must be one line", field=field.key)
    if field.choices:
        lines = [line.strip() for line in value.split("\n")]
        if len(lines) != field.choices or not all(lines):
            raise InvalidInput(f"needs exactly {field.choices} non-empty lines, one per choice in the same order "
                               f"(got {len([x for x in lines if x])})", field=field.key)
        return json.dumps(lines, ensure_ascii=False)
    return value


def shown_value(field: Field, stored: str) -> str:
    """A stored translation as the form shows it (choices: one a line)."""
    if field.choices and stored:
        try:
            return "\n".join(str(c) for c in json.loads(stored))
        except ValueError:
            return stored
    return stored


@transaction.atomic
def save(task, language: str, values: dict[str, Any]) -> dict[str, int]:
    """Store the owner's translations into `language` (field -> text; an empty text removes the translation).
    Every value is checked before anything is stored (all or nothing). Returns how many were saved and removed."""
    check_language(language)
    known = {f.key: f for f in fields(task)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise InvalidInput(f"not a text of this task: {', '.join(unknown[:5])}", field=unknown[0])
    checked = {key: stored_value(known[key], value) for key, value in values.items()}
    existing = _stored(task, language, list(checked))
    stale = set(existing) - set(_current(task, existing))  # saved again as it is: now current
    saved = removed = 0
    for key, value in checked.items():
        row = existing.get(key)
        if not value:
            if row is not None:
                row.delete()
                removed += 1
        elif row is None or row.text != value or key in stale:
            TextTranslation.objects.update_or_create(task=task, language=language, field=key,
                                                     defaults={"text": value})
            saved += 1
    return {"saved": saved, "removed": removed}


def progress(task, language: str) -> dict[str, Any]:
    """How far the translation into `language` is: fields translated, out of date, total."""
    keys = [f.key for f in fields(task)]
    rows = _stored(task, language, keys)
    current = _current(task, rows)
    return {"total": len(keys), "translated": len(current), "stale": sorted(set(rows) - set(current))}


def rows_for_form(task, language: str) -> list[dict[str, Any]]:
    """The page's rows: each field, its source, the stored translation (as shown) and whether it is out of date."""
    check_language(language)
    all_fields = fields(task)
    rows = _stored(task, language, [f.key for f in all_fields])
    current = _current(task, rows)
    return [{"field": f, "value": shown_value(f, rows[f.key].text) if f.key in rows else "",
             "stale": f.key in rows and f.key not in current} for f in all_fields]
