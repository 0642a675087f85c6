"""The owner's side of a task's study: its settings (on or off, the languages offered; the assignment's seed and
mode are `study.arms.update_settings`, fixed once anyone was assigned) and its figures (consents per version,
withdrawals, eligibility, survey responses)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils.translation import gettext as _

from dynabench_site.errors import InvalidInput
from study import arms
from study.models import Consent, ConsentRecord, Participant, Study, Survey, SurveyResponse


def study_of(task) -> Study | None:
    return Study.objects.filter(task=task).first()


def language_codes() -> list[str]:
    return [code for code, _name in settings.LANGUAGES]


@transaction.atomic
def configure(task, data: dict[str, Any]) -> Study:
    """Update the task's study (made at the first call): `enabled` (bool), `languages` (codes of
    settings.LANGUAGES), `seed` and `assignment` (study.arms.update_settings: refused once anyone was assigned)."""
    if not isinstance(data, dict):
        raise InvalidInput(_("the body must be an object"))
    accepted = {"enabled", "languages", "seed", "assignment"}
    unknown = sorted(str(k)[:40] for k in set(data) - accepted)
    if unknown:
        raise InvalidInput(_("is not a setting of the study; accepted: %(names)s") % {
            "names": ", ".join(sorted(accepted))}, field=unknown[0])
    assignment = {k: data[k] for k in ("seed", "assignment") if k in data}
    study = arms.update_settings(task, assignment) if assignment else Study.objects.get_or_create(task=task)[0]
    study = Study.objects.select_for_update().get(pk=study.pk)
    changed = []
    if "enabled" in data:
        if not isinstance(data["enabled"], bool):
            raise InvalidInput(_("must be true or false"), field="enabled")
        study.enabled = data["enabled"]
        changed.append("enabled")
    if "languages" in data:
        codes = data["languages"]
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise InvalidInput(_("must be a list of language codes"), field="languages")
        strange = [c[:20] for c in codes if c not in language_codes()]
        if strange:
            raise InvalidInput(_("%(code)s is not a language of this site; choose from: %(codes)s") % {
                "code": repr(strange[0]), "codes": ", ".join(language_codes())}, field="languages")
        study.languages = [c for c in language_codes() if c in codes]
        changed.append("languages")
    if changed:
        study.save(update_fields=[*changed, "updated_at"])
    return study


def figures(task) -> dict[str, Any]:
    """The study's counts: people who consented (to the latest version, live), withdrew, were found eligible or
    ineligible; records per consent version; responses per survey."""
    latest = Consent.objects.filter(task=task).order_by("-version").values_list("version", flat=True).first()
    records = ConsentRecord.objects.filter(task=task)
    per_version = list(records.values("version").annotate(
        agreed=Count("id"), withdrawn=Count("id", filter=Q(withdrawn_at__isnull=False))).order_by("-version"))
    people = Participant.objects.filter(task=task)
    surveys = []
    for survey in Survey.objects.filter(task=task).order_by("phase"):
        answered = SurveyResponse.objects.filter(survey=survey)
        surveys.append({"phase": survey.phase, "active": survey.active, "questions": survey.questions.count(),
                        "responses": answered.count(), "ineligible": answered.filter(eligible=False).count()})
    return {
        "consent_version": latest,
        "consented": (records.filter(version=latest, withdrawn_at__isnull=True).values("user").distinct().count()
                      if latest else 0),
        "consented_any": records.values("user").distinct().count(),
        "withdrawn": people.filter(withdrawn_at__isnull=False).count(),
        "participants": people.count(),
        "eligible": people.filter(eligible=True).count(),
        "ineligible": people.filter(eligible=False).count(),
        "per_version": per_version,
        "surveys": surveys,
    }
