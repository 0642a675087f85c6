"""The study's gate before work (tasks.gates): consent, the pre-survey and its eligibility rules, the arm.

`pending(user, task)` is the first step the person still has to take, in this order:

1. `withdrawn`: they withdrew from the study; no more work on the task (final);
2. `consent`: the task has a consent text and they have no live record for its latest version (a new version
   asks again);
3. `pre_survey`: the task has an active pre-survey with questions and they have not answered it;
4. `ineligible`: their pre-survey answers (or their participant row) made them ineligible: they stop, politely,
   before any work and before any pay is owed;
5. the arm: `study.arms.assign(task, user)` gets or makes their participant row and assigns an arm where the task
   has active arms (no step: assignment needs nothing from the person).

A task without a Study row, or with `enabled` false, has no gate at all. That path runs on every submission, so it
is one cached answer (dynabench_site.access_cache, keyed by the task): a write to the study's rows replaces the
access generation (the receivers below). A person who passed every step is cached the same way.
Owners and admins are never asked (tasks.gates.pending skips the gates for them).
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _

from dynabench_site import access_cache
from study.models import Arm, Consent, ConsentRecord, Participant, Question, Study, Survey, SurveyResponse
from tasks import roles
from tasks.gates import Step

# Each write to these rows replaces the access generation, so a cached gate answer never outlives what it read.
for _model in (Study, Consent, ConsentRecord, Survey, Question, SurveyResponse, Participant, Arm):
    post_save.connect(access_cache.bump, sender=_model, dispatch_uid=f"study-gate-save-{_model.__name__}")
    post_delete.connect(access_cache.bump, sender=_model, dispatch_uid=f"study-gate-delete-{_model.__name__}")


def facts(task) -> dict[str, Any] | None:
    """What the gate needs to know of the task's study, or None when it has none (or it is off): the latest
    consent version (None: no consent text) and whether an active pre-survey with questions exists. From the
    access cache when a request read it lately."""
    name = access_cache.key("study", task.pk)
    found, generation = access_cache.lookup(name)
    if found is access_cache.MISSING:
        found = _read_facts(task)
        access_cache.put(name, found, generation)
    return found


def _read_facts(task) -> dict[str, Any] | None:
    if not Study.objects.filter(task_id=task.pk, enabled=True).exists():
        return None
    latest = Consent.objects.filter(task_id=task.pk).order_by("-version").values_list("version", flat=True).first()
    pre = Question.objects.filter(survey__task_id=task.pk, survey__phase=Survey.Phase.PRE,
                                  survey__active=True).exists()
    return {"consent": latest, "pre": pre}


def enabled(task) -> bool:
    return facts(task) is not None


def pending(user, task) -> Step | None:
    if not getattr(user, "is_authenticated", False):
        return None  # the page's login comes first; the services are only reached signed in
    study = facts(task)
    if study is None:
        return None
    name = access_cache.key("study-pass", user.pk, task.pk)
    passed, generation = access_cache.lookup(name)
    if passed is True:
        return None
    step = first_step(user, task, study)
    if step is None:
        access_cache.put(name, True, generation)
    return step


def step_url(name: str, task, **kwargs: str) -> str:
    return reverse(name, kwargs={"slug": task.slug, **kwargs})


def first_step(user, task, study: dict[str, Any]) -> Step | None:
    participant = Participant.objects.filter(task_id=task.pk, user_id=user.pk).first()
    step = first_step_before_surveys(user, task, study, participant)
    if step is not None:
        return step
    if study["pre"]:
        response = (SurveyResponse.objects.filter(survey__task_id=task.pk, survey__phase=Survey.Phase.PRE,
                                                  user_id=user.pk).only("eligible").first())
        if response is None:
            url = step_url("study-survey", task, phase=Survey.Phase.PRE)
            return Step("pre_survey", _("Answer a few questions before you start: %(url)s") % {"url": url}, url)
        if not response.eligible:
            return ineligible_step(task)
    if participant is not None and participant.eligible is False:
        return ineligible_step(task)
    from study import arms

    arms.assign(task, user)
    return None


def first_step_before_surveys(user, task, study: dict[str, Any], participant: Any = False) -> Step | None:
    """`withdrawn` or `consent` (what comes before any survey), or None. Owners and admins are never asked."""
    if roles.can_manage(user, task):
        return None
    if participant is False:
        participant = Participant.objects.filter(task_id=task.pk, user_id=user.pk).first()
    if participant is not None and participant.withdrawn_at is not None:
        return Step("withdrawn", _("You have withdrawn from this task's study, so you cannot work on it any more."),
                    step_url("study-stop", task, reason="withdrawn"))
    version = study["consent"]
    if version is not None:
        records = list(ConsentRecord.objects.filter(task_id=task.pk, user_id=user.pk).only("version", "withdrawn_at"))
        live = [r for r in records if r.withdrawn_at is None]
        if not any(r.version == version for r in live):
            if len(live) < len(records):
                return Step("withdrawn", _("You have withdrawn from this task's study, so you cannot work on it "
                                           "any more."), step_url("study-stop", task, reason="withdrawn"))
            url = step_url("study-consent", task)
            if live:
                message = _("This study's consent changed (now version %(version)s): read it and agree again "
                            "before you continue: %(url)s") % {"version": version, "url": url}
            else:
                message = _("Read this study's consent (version %(version)s) and agree to it before you start: "
                            "%(url)s") % {"version": version, "url": url}
            return Step("consent", message, url, extra={"consent_version": version, "first_visit": not live})
    return None


def ineligible_step(task) -> Step:
    return Step("ineligible", _("Thank you for your answers: this study is looking for other participants, so "
                                "there is no work for you on this task."),
                step_url("study-stop", task, reason="ineligible"))


def with_next(url: str, next_url: str | None) -> str:
    """`url` carrying `next` (a same-site path the caller checked) as its query."""
    return f"{url}?{urlencode({'next': next_url})}" if next_url else url
