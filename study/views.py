"""The study's pages: the participant's path (consent, the surveys, the stop pages, withdrawal) and the owner's
study console (settings and figures, consent versions, survey editors, downloads of the records).

Participant pages need a signed-in person who may see the task; a task whose study is off has none of them (404).
After each step the person goes on to the next pending one (tasks.gates), then back to the page they came from
(`next`: a path on this site only), else to the task's page. Owner pages: the task's owners and admins (403
otherwise), through tasks.access.task_for with the owner role.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dynabench_site.errors import InvalidInput
from dynabench_site.pages import returns_to
from dynabench_site.params import whole_number
from study import consent as consents
from study import console, exits, gate, records, surveys, texts
from study.forms import ConsentForm, QuestionForm, StudyForm, SurveyForm
from study.models import Question, Survey
from tasks import gates as work_gates
from tasks import roles
from tasks.access import task_for

STOP_REASONS = (exits.DECLINED, exits.INELIGIBLE, exits.WITHDRAWN)


def next_of(request: HttpRequest) -> str | None:
    """The page to go back to after the study's steps: a path on this site, else None."""
    return surveys.safe_next(request.POST.get("next") or request.GET.get("next"), request.get_host())


def continue_url(request: HttpRequest, task) -> str:
    """The next pending step (carrying `next`), else `next`, else the task's page."""
    target = next_of(request)
    step = work_gates.pending(request.user, task)
    if step is not None:
        return gate.with_next(step.url, target)
    return target or reverse("task-detail", args=[task.slug])


def study_task(request: HttpRequest, slug: str):
    """The task for a participant page: visible to the person, with its study on (404 otherwise)."""
    task = task_for(request, slug)
    if not gate.enabled(task):
        raise Http404(_("This task runs no study."))
    return task


# --- the participant's pages --------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
@returns_to("study-consent", "slug")
def consent_page(request: HttpRequest, slug: str) -> HttpResponse:
    task = study_task(request, slug)
    latest = consents.current(task)
    if latest is None:
        raise Http404(_("This task asks for no consent."))
    if request.method == "POST":
        if request.POST.get("decision") == "decline":
            return redirect(gate.with_next(reverse("study-stop", args=[task.slug, exits.DECLINED]), next_of(request)))
        if request.POST.get("decision") != "agree":
            raise InvalidInput(_("choose whether you agree or not"), field="decision")
        version = whole_number(request.POST.get("version", ""), "version")
        if version is None:
            raise InvalidInput(_("must be a version number"), field="version")
        consents.agree(request.user, task, version)
        messages.success(request, _("Thank you: your consent (version %(version)s) is recorded.") % {
            "version": version})
        return redirect(continue_url(request, task))
    status = consents.status(request.user, task)
    context = {"task": task, "consent": latest, "text": texts.consent_text(latest), "status": status,
               "withdrawn": consents.is_withdrawn(request.user, task), "next": next_of(request) or "",
               "changed": bool(status["agreed_version"] and not status["agreed"] and not status["withdrawn_at"])}
    return render(request, "study/consent.html", context)


@login_required
@require_GET
def stop_page(request: HttpRequest, slug: str, reason: str) -> HttpResponse:
    """Where a person who declined, was found ineligible or withdrew ends: thanks, and the way back to the crowd
    platform they came from (study.exits), if any."""
    if reason not in STOP_REASONS:
        raise Http404(_("No such page."))
    task = study_task(request, slug)
    context = {"task": task, "reason": reason, "exit_url": exits.return_url(request.user, task, reason),
               "consent_url": reverse("study-consent", args=[task.slug]), "next": next_of(request) or ""}
    return render(request, "study/stop.html", context)


@login_required
@require_http_methods(["GET", "POST"])
@returns_to("study-withdraw", "slug")
def withdraw_page(request: HttpRequest, slug: str) -> HttpResponse:
    task = study_task(request, slug)
    if request.method == "POST":
        if request.POST.get("confirm") != "yes":
            raise InvalidInput(_("tick the box to confirm that you withdraw"), field="confirm")
        consents.withdraw(request.user, task)
        messages.success(request, _("You have withdrawn from this study."))
        return redirect("study-stop", slug=task.slug, reason=exits.WITHDRAWN)
    context = {"task": task, "status": consents.status(request.user, task),
               "withdrawn": consents.is_withdrawn(request.user, task)}
    return render(request, "study/withdraw.html", context)


def survey_rows(found: Survey, values: dict[str, Any] | None = None, errors: dict[str, str] | None = None) -> list:
    """The survey's questions as the page shows them: translated texts and option labels (study.texts), the
    stored option values, what was typed and the error by the question."""
    shown = texts.survey_texts(found)
    values, errors = values or {}, errors or {}
    rows = []
    for q in surveys.questions(found):
        tr = shown["questions"].get(q.key, {"text": q.text, "choices": q.choices})
        value = values.get(q.key)
        chosen = value if isinstance(value, list) else [value] if value not in (None, "") else []
        rows.append({"q": q, "text": tr["text"], "value": "" if value is None or isinstance(value, list) else value,
                     "options": [{"value": v, "label": label, "checked": v in chosen}
                                 for v, label in zip(q.choices or [], tr["choices"], strict=False)],
                     "error": errors.get(q.key, "")})
    return [shown, rows]


@login_required
@require_http_methods(["GET", "POST"])
def survey_page(request: HttpRequest, slug: str, phase: str) -> HttpResponse:
    task = study_task(request, slug)
    surveys.check_phase(phase)
    found = surveys.survey(task, phase)
    if found is None:
        raise Http404(_("This task has no survey to answer here."))
    study = gate.facts(task)
    before = gate.first_step_before_surveys(request.user, task, study)
    if before is not None:  # consent (or a withdrawal) comes first
        return redirect(gate.with_next(before.url, next_of(request)))
    answered = surveys.response_of(request.user, found)
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    status = 200
    if request.method == "POST" and answered is None:
        items = surveys.questions(found)
        for q in items:
            values[q.key] = request.POST.getlist(q.key) if q.kind == Question.Kind.MULTIPLE else request.POST.get(q.key)
        try:
            surveys.answer(request.user, task, phase, values)
        except InvalidInput as refused:
            key = (refused.field or "").removeprefix("answers.").split(".")[0]
            errors[key if key in values else "_form"] = refused.message
            status = 400
        else:
            if phase == Survey.Phase.POST:
                messages.success(request, _("Thank you for your answers."))
            return redirect(continue_url(request, task))
    elif request.method == "POST":
        messages.info(request, _("You have already answered this survey."))
        return redirect(continue_url(request, task))
    shown, rows = survey_rows(found, values, errors)
    context = {"task": task, "survey": found, "shown": shown, "rows": rows, "answered": answered,
               "form_error": errors.get("_form", ""), "next": next_of(request) or "",
               # A GET reads only: where to go on is the next work page's business (its gate sends the person on).
               "continue_url": (next_of(request) or reverse("task-detail", args=[task.slug])) if answered else ""}
    return render(request, "study/survey.html", context, status=status)


# --- the owner's console ------------------------------------------------------------------------------------


def owned_task(request: HttpRequest, slug: str):
    return task_for(request, slug, roles.OWNER)


@login_required
@require_http_methods(["GET", "POST"])
@returns_to("study-console", "slug")
def console_page(request: HttpRequest, slug: str) -> HttpResponse:
    task = owned_task(request, slug)
    study = console.study_of(task)
    initial = {"enabled": study.enabled if study else False, "languages": study.languages if study else [],
               "seed": study.seed if study else 0, "assignment": study.assignment if study else "balanced"}
    form = StudyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        if study is not None and study.seed == data["seed"] and study.assignment == data["assignment"]:
            data.pop("seed"), data.pop("assignment")  # unchanged: never refused for being fixed
        console.configure(task, data)
        messages.success(request, _("The study's settings are saved."))
        return redirect("study-console", slug=task.slug)
    context = {"task": task, "study": study, "form": form, "figures": console.figures(task),
               "consent": consents.current(task),
               "surveys": {s.phase: s for s in Survey.objects.filter(task=task)}}
    return render(request, "study/console.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def consent_edit(request: HttpRequest, slug: str) -> HttpResponse:
    task = owned_task(request, slug)
    latest = consents.current(task)
    form = ConsentForm(request.POST or None, initial={"text": latest.text if latest else ""})
    if request.method == "POST" and form.is_valid():
        try:
            saved = consents.publish(task, form.cleaned_data["text"], by=request.user)
        except InvalidInput as refused:
            form.add_error("text", refused.message)
        else:
            if latest is None or saved.version != latest.version:
                messages.success(request, _("Consent version %(version)s published: everyone agrees to it before "
                                            "they continue.") % {"version": saved.version})
            else:
                messages.info(request, _("Nothing changed: the consent stays as it was."))
            return redirect("study-consent-edit", slug=task.slug)
    versions = task.consents.select_related("created_by")
    return render(request, "study/consent_edit.html", {"task": task, "form": form, "versions": versions,
                                                       "figures": console.figures(task)},
                  status=400 if form.errors else 200)


def phase_of(phase: str) -> str:
    surveys.check_phase(phase)
    return phase


@login_required
@require_http_methods(["GET", "POST"])
def survey_edit(request: HttpRequest, slug: str, phase: str) -> HttpResponse:
    task = owned_task(request, slug)
    phase_of(phase)
    found = surveys.survey(task, phase, active=False)
    initial = {"title": found.title, "intro": found.intro, "active": found.active} if found else {"active": True}
    form = SurveyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            surveys.configure(task, phase, **form.cleaned_data)
        except InvalidInput as refused:
            form.add_error(refused.field if refused.field in form.fields else None, refused.message)
        else:
            messages.success(request, _("The survey is saved."))
            return redirect("study-survey-edit", slug=task.slug, phase=phase)
    return survey_editor(request, task, phase, found, form, QuestionForm(initial={"required": True}),
                         status=400 if form.errors else 200)


def survey_editor(request: HttpRequest, task, phase: str, found: Survey | None, form: SurveyForm,
                  question_form: QuestionForm, status: int = 200) -> HttpResponse:
    context = {"task": task, "phase": phase, "survey": found, "form": form, "question_form": question_form,
               "questions": [surveys.with_rule_text(q) for q in surveys.questions(found)] if found else [],
               "participant_url": reverse("study-survey", args=[task.slug, phase])}
    return render(request, "study/survey_edit.html", context, status=status)


def save_question(form: QuestionForm, action) -> bool:
    """Run `action(definition)` when the form is valid; a refusal is shown by the field it names."""
    if not form.is_valid():
        return False
    try:
        action(form.definition())
    except InvalidInput as refused:
        form.add_error(form.field_for(refused.field), refused.message)
        return False
    return True


@login_required
@require_POST
def question_add(request: HttpRequest, slug: str, phase: str) -> HttpResponse:
    task = owned_task(request, slug)
    phase_of(phase)
    found = surveys.survey(task, phase, active=False) or surveys.configure(task, phase)
    form = QuestionForm(request.POST)
    if save_question(form, lambda d: surveys.add_question(found, d)):
        messages.success(request, _("Question added."))
        return redirect("study-survey-edit", slug=task.slug, phase=phase)
    survey_form = SurveyForm(initial={"title": found.title, "intro": found.intro, "active": found.active})
    return survey_editor(request, task, phase, found, survey_form, form, status=400)


def owned_question(request: HttpRequest, slug: str, phase: str, key: str) -> tuple[Any, Question]:
    task = owned_task(request, slug)
    phase_of(phase)
    question = get_object_or_404(Question, survey__task=task, survey__phase=phase, key=key)
    return task, question


@login_required
@require_http_methods(["GET", "POST"])
def question_edit(request: HttpRequest, slug: str, phase: str, key: str) -> HttpResponse:
    task, question = owned_question(request, slug, phase, key)
    form = QuestionForm(request.POST or None, initial=QuestionForm.initial_for(question))
    if request.method == "POST" and save_question(form, lambda d: surveys.update_question(question, d)):
        messages.success(request, _("Question saved."))
        return redirect("study-survey-edit", slug=task.slug, phase=phase)
    return render(request, "study/question_edit.html", {"task": task, "phase": phase, "question": question,
                                                        "form": form}, status=400 if form.errors else 200)


@login_required
@require_POST
def question_delete(request: HttpRequest, slug: str, phase: str, key: str) -> HttpResponse:
    task, question = owned_question(request, slug, phase, key)
    surveys.delete_question(question)
    messages.success(request, _("Question %(key)s deleted.") % {"key": key})
    return redirect("study-survey-edit", slug=task.slug, phase=phase)


@login_required
@require_POST
@returns_to("study-survey-edit", "slug", "phase")
def question_move(request: HttpRequest, slug: str, phase: str, key: str) -> HttpResponse:
    task, question = owned_question(request, slug, phase, key)
    surveys.move_question(question, request.POST.get("direction", ""))
    return redirect("study-survey-edit", slug=task.slug, phase=phase)


def csv_response(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
def consent_csv(request: HttpRequest, slug: str) -> HttpResponse:
    task = owned_task(request, slug)
    return csv_response(records.consent_csv(task), f"{task.slug}-consent-records.csv")


@login_required
@require_GET
def answers_csv(request: HttpRequest, slug: str, phase: str) -> HttpResponse:
    task = owned_task(request, slug)
    return csv_response(records.answers_csv(task, phase_of(phase)), f"{task.slug}-{phase}-survey-answers.csv")
