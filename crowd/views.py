"""Pages of the crowd: the owner's crowd console (quizzes, members, suspensions, gold, quality, batches,
pay), and the worker's side (quizzes, external links, assignments, profiles). Views parse, call a service,
render; the rules are in the services."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.models import Example
from crowd import badges, lifecycle, links, members, pay, platform, quizzes
from crowd.forms import AppointForm, BatchForm, PlatformForm, QuizItemForm, QuizSettingsForm, SuspendForm
from crowd.models import Assignment, Badge, PlatformEvent, Quiz, WorkerBatch
from dynabench_site import csvsafe
from dynabench_site.errors import InvalidInput
from dynabench_site.pages import back_url, returns_to
from dynabench_site.params import whole_number, whole_numbers
from study import surveys
from tasks import guidelines, roles
from tasks.access import step_redirect, task_for, visible_tasks
from tasks.models import LabeledItem, Suspension, Task, TaskMembership
from validation import gold, guidance
from validation.models import GoldItem

GOLD_CANDIDATES = 100


# --- the owner's crowd console -------------------------------------------------------------------


@login_required
def console(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    quiz_rows = [{"role": role, "label": label, "quiz": q, "summary": quizzes.summary(q) if q else None}
                 for role, label in Quiz.Role.choices for q in [quizzes.quiz_for(task, role, active_only=False)]]
    return render(request, "crowd/console.html", {
        "task": task, "crowd": task.typed_config.crowd, "quizzes": quiz_rows,
        "guidelines": guidelines.current(task), "appoint_form": AppointForm(), "suspend_form": SuspendForm(),
        "memberships": TaskMembership.objects.filter(task=task).select_related("user", "granted_by"),
        "suspensions": Suspension.objects.filter(task=task, lifted_at__isnull=True).select_related("user"),
        "standings": gold.standings(task), "gold_count": task_gold(task).filter(active=True).count(),
        "batches": WorkerBatch.objects.filter(task=task),
    })


def task_gold(task: Task):
    return GoldItem.objects.filter(task=task)


@login_required
@require_POST
@returns_to("crowd-console", "slug")
def appoint(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    form = AppointForm(request.POST)
    if not form.is_valid():
        raise InvalidInput("give a username and a role")
    if request.POST.get("action") == "revoke":
        members.revoke(task, form.cleaned_data["username"], form.cleaned_data["role"])
        messages.success(request, _("%(name)s no longer holds that role here.") % {"name": form.cleaned_data["username"]})
    else:
        members.appoint(task, form.cleaned_data["username"], form.cleaned_data["role"], request.user)
        messages.success(request, _("%(name)s is now %(role)s on %(task)s.") % {
            "name": form.cleaned_data["username"], "role": form.cleaned_data["role"], "task": task.name})
    return redirect(back_url(request, reverse("crowd-console", args=[slug])))


@login_required
@require_POST
@returns_to("crowd-people", "slug")
def suspend(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    username = request.POST.get("username", "")
    if request.POST.get("action") == "lift":
        members.lift(task, username)
        messages.success(request, _("%(name)s may work on %(task)s again.") % {"name": username, "task": task.name})
    else:
        redecided = members.suspend(task, username, request.user, request.POST.get("reason", ""))
        messages.success(request, _("%(name)s is suspended from %(task)s; their votes on %(n)s example(s) no longer "
                                    "count, and what those votes decided is open again.")
                         % {"name": username, "task": task.name, "n": redecided})
    return redirect(back_url(request, reverse("crowd-people", args=[slug])))


@login_required
def people(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    return render(request, "crowd/people.html", {"task": task, "people": members.people(task),
                                                 "suspend_form": SuspendForm()})


# --- quizzes (owner) -----------------------------------------------------------------------------


@login_required
def quiz_edit(request, slug: str, role: str):
    task = task_for(request, slug, roles.OWNER)
    # A GET shows the quiz without creating it (GETs change nothing); a POST saves it.
    quiz = quizzes.ensure_quiz(task, role) if request.method == "POST" else quizzes.draft_quiz(task, role)
    settings_form = QuizSettingsForm(request.POST if request.POST.get("form") == "settings" else None,
                                     initial={"pass_mark": quiz.pass_mark, "max_attempts": quiz.max_attempts,
                                              "active": quiz.active})
    item_form = QuizItemForm(request.POST if request.POST.get("form") == "item" else None, quiz=quiz)
    if request.method == "POST":
        if settings_form.is_bound and settings_form.is_valid():
            quizzes.configure(quiz, **settings_form.cleaned_data)
            messages.success(request, _("Quiz settings saved."))
            return redirect("crowd-quiz-edit", slug=slug, role=role)
        if item_form.is_bound and item_form.is_valid():
            quizzes.add_item(quiz, **item_form.item(), source="written by an owner")
            messages.success(request, _("Question added."))
            return redirect("crowd-quiz-edit", slug=slug, role=role)
    saved = quiz.pk is not None
    return render(request, "crowd/quiz_edit.html", {
        "task": task, "quiz": quiz, "questions": quizzes.questions(quiz) if saved else [],
        "settings_form": settings_form, "item_form": item_form,
        "summary": quizzes.summary(quiz) if saved else {"items": 0, "attempts": 0, "takers": 0, "passed": 0},
        **quiz_candidates(task, quiz),
    }, status=400 if request.method == "POST" else 200)


def quiz_candidates(task: Task, quiz: Quiz) -> dict:
    used = set(quiz.items.values_list("source", flat=True)) if quiz.pk else set()
    items = [i for i in LabeledItem.objects.filter(task=task).order_by("id")[:60] if f"labelled item {i.pk}" not in used]
    decided = Example.objects.filter(round__task=task, retracted=False,
                                     consensus__in=[Example.Consensus.VERIFIED, Example.Consensus.REJECTED])
    examples = [e for e in decided.select_related("context").order_by("-id")[:60] if f"example {e.pk}" not in used]
    return {"labelled": items[:30], "decided": examples[:30]}


@login_required
@require_POST
@returns_to("crowd-quiz-edit", "slug", "role")
def quiz_add(request, slug: str, role: str):
    task = task_for(request, slug, roles.OWNER)
    quiz = quizzes.ensure_quiz(task, role)
    added = 0
    for item in LabeledItem.objects.filter(task=task, pk__in=ids(request.POST.getlist("labelled"))):
        quizzes.add_labelled_item(quiz, item)
        added += 1
    for example in Example.objects.filter(round__task=task, pk__in=ids(request.POST.getlist("example"))):
        quizzes.add_example(quiz, example)
        added += 1
    messages.success(request, _("%(n)s question(s) added.") % {"n": added})
    return redirect("crowd-quiz-edit", slug=slug, role=role)


@login_required
@require_POST
def quiz_remove(request, slug: str, role: str, item: int):
    task = task_for(request, slug, roles.OWNER)
    quizzes.remove_item(quizzes.ensure_quiz(task, role), item)
    messages.success(request, _("Question removed."))
    return redirect("crowd-quiz-edit", slug=slug, role=role)


def ids(values: list[str]) -> list[int]:
    return whole_numbers(values)


# --- gold (owner) --------------------------------------------------------------------------------


@login_required
def gold_page(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    items = task_gold(task).select_related("example__context").order_by("-created_at")
    used = items.values("example")
    candidates = (Example.objects.filter(round__task=task, retracted=False,
                                         consensus__in=list(gold.GOLD_VERDICTS))
                  .exclude(pk__in=used).select_related("context").order_by("-id")[:GOLD_CANDIDATES])
    return render(request, "crowd/gold.html", {"task": task, "items": items, "candidates": candidates,
                                               "standings": gold.standings(task), "crowd": task.typed_config.crowd})


@login_required
@require_POST
@returns_to("crowd-gold", "slug")
def gold_mark(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    example_id = whole_number(request.POST.get("example"), "example")
    if example_id is None:
        raise InvalidInput("choose an example", field="example")
    example = get_object_or_404(Example.objects.select_related("round__task"), pk=example_id, round__task=task)
    if request.POST.get("action") == "unmark":
        gold.unmark(example)
        messages.success(request, _("Example %(id)s is no longer served as a gold item.") % {"id": example.pk})
    else:
        gold.mark(example, by=request.user)
        messages.success(request, _("Example %(id)s is now a gold item, mixed unannounced into the queue.")
                         % {"id": example.pk})
    return redirect("crowd-gold", slug=slug)


# --- external worker batches and pay (owner) -----------------------------------------------------


def owned_batch(request, pk: int) -> WorkerBatch:
    batch = get_object_or_404(WorkerBatch.objects.select_related("task"), pk=pk)
    task_for(request, batch.task.slug, roles.OWNER)
    return batch


@login_required
def batch_new(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    form = BatchForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        batch = links.create_batch(task, request.user, **form.cleaned_data)
        messages.success(request, _("Batch %(name)s: %(n)s links, valid until %(until)s UTC.") % {
            "name": batch.name, "n": batch.assignments.count(), "until": f"{batch.expires_at:%Y-%m-%d %H:%M}"})
        return redirect("crowd-batch", pk=batch.pk)
    return render(request, "crowd/batch_new.html", {"task": task, "form": form}, status=400 if form.errors else 200)


@login_required
def batch_page(request, pk: int):
    batch = owned_batch(request, pk)
    assignments = list(batch.assignments.select_related("user", "batch"))
    rows = [{"a": a, "url": request.build_absolute_uri(links.link_path(a)) if not a.via_open_link else ""}
            for a in assignments]
    open_path = request.build_absolute_uri(lifecycle.open_link_path(batch))
    return render(request, "crowd/batch.html", {
        "task": batch.task, "batch": batch, "rows": rows, "places": lifecycle.places(batch),
        "open_link": lifecycle.open_link_template(batch, open_path),
        "webhook_url": request.build_absolute_uri(reverse("crowd-webhook", args=[batch.pk])),
        "events": PlatformEvent.objects.filter(batch=batch)[:EVENTS_SHOWN],
        "platform_form": PlatformForm(initial={
            "places": batch.places, "time_limit_minutes": batch.time_limit_minutes, "study_id": batch.study_id,
            "completion_url": batch.completion_url, "screen_out_url": batch.screen_out_url}),
        "polling": bool(batch.study_id),
    })


EVENTS_SHOWN = 20


@login_required
@require_POST
@returns_to("crowd-batch", "pk")
def batch_platform(request, pk: int):
    batch = owned_batch(request, pk)
    form = PlatformForm(request.POST)
    if not form.is_valid():
        raise InvalidInput("; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    lifecycle.configure(batch, **form.cleaned_data)
    messages.success(request, _("Platform settings saved."))
    return redirect("crowd-batch", pk=batch.pk)


@login_required
def batch_links_csv(request, pk: int):
    batch = owned_batch(request, pk)
    rows = [[a.worker_id, a.assignment_id, request.build_absolute_uri(links.link_path(a))]
            for a in batch.assignments.select_related("batch").filter(via_open_link=False)]
    text = csvsafe.rows_text([["worker_id", "assignment_id", "link"], *rows])
    return csv_response(text, f"{batch.task.slug}-batch{batch.pk}-links.csv")


@login_required
@require_POST
def batch_close(request, pk: int):
    batch = owned_batch(request, pk)
    links.close(batch)
    messages.success(request, _("Batch closed: its links no longer sign anyone in."))
    return redirect("crowd-batch", pk=batch.pk)


@login_required
def pay_page(request, pk: int):
    batch = owned_batch(request, pk)
    rows = pay.report(batch)
    return render(request, "crowd/pay.html", {"task": batch.task, "batch": batch, "rows": rows,
                                              "total": pay.total(rows), "rates": batch.task.typed_config.crowd.pay})


@login_required
def pay_csv(request, pk: int):
    batch = owned_batch(request, pk)
    return csv_response("".join(pay.csv_text(batch)), f"{batch.task.slug}-batch{batch.pk}-pay.csv")


def csv_response(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- the worker's side ---------------------------------------------------------------------------


@login_required
@returns_to("crowd-quiz", "slug", "role")
def quiz_take(request, slug: str, role: str):
    task = task_for(request, slug)
    quiz = quizzes.quiz_for(task, role)
    if quiz is None:
        raise Http404("This task has no such quiz.")
    context = {"task": task, "quiz": quiz, "next": request.GET.get("next", "") or request.POST.get("next", ""),
               "left": quizzes.attempts_left(quiz, request.user), "held": quizzes.holds_by_quiz(request.user, quiz),
               "pending": guidelines.pending(request.user, task), "attempt": None}
    if request.method == "POST":
        answers = {k.removeprefix("q"): v for k, v in request.POST.items() if k.startswith("q")}
        context["attempt"] = attempt = quizzes.grade(quiz, request.user, answers)
        if attempt.passed:
            messages.success(request, _("Passed (%(correct)s of %(total)s right): you are now a %(role)s on %(task)s.")
                             % {"correct": attempt.correct, "total": attempt.total,
                                "role": quiz.get_role_display().lower(), "task": task.name})
            return redirect(back_url(request, reverse("task-detail", args=[slug])))
        context["left"] = quizzes.attempts_left(quiz, request.user)
        context["marks"] = quizzes.marks(attempt)
    context["questions"] = quizzes.questions(quiz)
    if quiz.role == Quiz.Role.VALIDATOR:  # the validator quiz tests how to judge: it shows how
        context["guidance"] = guidance.text(task)
    return render(request, "crowd/quiz.html", context)


def link(request, token: str):
    """GET shows what the link is for (no side effect: link scanners must not spend it); POST signs in.
    A refused link gets its own page (not the generic error page): the worker came from another site and
    needs to know what to tell its organisers."""
    try:
        if request.method == "POST":
            assignment = links.follow(token)
            login(request, assignment.user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect("crowd-assignment", pk=assignment.pk)
        assignment = links.read(token)
    except links.LinkRefused as exc:
        return render(request, "crowd/link_refused.html", {"reason": exc.reason, "message": _(exc.message)},
                      status=exc.status_code)
    return render(request, "crowd/link.html", {"assignment": assignment, "task": assignment.batch.task,
                                               "used": assignment.followed_at is not None})


def open_link(request, token: str):
    """The batch's open study link (Prolific style): GET shows the study with its free places (no side effect);
    POST takes a free place for the participant id the platform appended, and signs in as that worker."""
    params = {key: request.POST.get(key) or request.GET.get(key, "")  # the platform appends them to the address
              for keys in lifecycle.PARAMETERS.values() for key in keys}
    try:
        batch = lifecycle.read_open(token)
        who = lifecycle.arrival(batch, params)
        if request.method == "POST":
            assignment = lifecycle.claim(token, params)
            login(request, assignment.user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect("crowd-assignment", pk=assignment.pk)
    except links.LinkRefused as exc:
        return render(request, "crowd/link_refused.html", {"reason": exc.reason, "message": _(exc.message)},
                      status=exc.status_code)
    keys = lifecycle.PARAMETERS[batch.source]
    return render(request, "crowd/open_link.html", {
        "batch": batch, "task": batch.task, "who": who, "free": lifecycle.places(batch).free,
        "taken": batch.assignments.filter(worker_id=who.worker_id).exists(),
        "hidden": [(k, params.get(k, "")) for k in keys if params.get(k)],
    })


def own_assignment(request, pk: int) -> Assignment:
    assignment = get_object_or_404(Assignment.objects.select_related("batch__task", "user"), pk=pk)
    if assignment.user_id != request.user.pk:
        raise Http404("No such assignment.")
    return assignment


@login_required
def assignment_page(request, pk: int):
    assignment = own_assignment(request, pk)
    if assignment.state == Assignment.State.ACTIVE and (step := step_redirect(request, assignment.batch.task)):
        return step  # the study's consent and pre-survey come first, straight from the link (tasks.gates)
    completed = assignment.state == Assignment.State.COMPLETED
    complete_path = reverse("crowd-assignment-complete", args=[pk])
    survey = surveys.post_survey_url(request.user, assignment.batch.task, complete_path) if completed else None
    return render(request, "crowd/assignment.html", {
        "assignment": assignment, "task": assignment.batch.task, "progress": links.progress(assignment),
        "survey_url": survey, "completed": completed and survey is None,
        "completion_url": links.completion_url(assignment) if completed and survey is None else None,
    })


@login_required
@require_POST
@returns_to("crowd-assignment", "pk")
def assignment_finish(request, pk: int):
    """The end of the work: the completion code, then the post-survey if the task has one, then the platform's
    completion address with the code."""
    assignment = own_assignment(request, pk)
    links.complete(assignment)
    complete_path = reverse("crowd-assignment-complete", args=[pk])
    if surveys.post_survey_url(request.user, assignment.batch.task, complete_path) is None:  # else the survey comes first
        messages.success(request, _("Thank you! Your completion code is below."))
    return redirect(complete_path)


@login_required
def assignment_complete(request, pk: int):
    """GET, reads only: the post-survey while it is still to answer, then the platform's completion address with
    the code (or the assignment page, which shows the code, when the batch has no address)."""
    assignment = own_assignment(request, pk)
    if assignment.state != Assignment.State.COMPLETED:
        return redirect("crowd-assignment", pk=pk)
    survey = surveys.post_survey_url(request.user, assignment.batch.task, request.path)
    if survey:
        return redirect(survey)
    return redirect(links.completion_url(assignment) or reverse("crowd-assignment", args=[pk]))


@login_required
def assignment_leave(request, pk: int):
    """A link worker leaving before the end (ineligible, declined consent, withdrawn): GET says what happens;
    POST frees their place (screened out / returned, no completion code) and sends them to the batch's
    screen-out address."""
    assignment = own_assignment(request, pk)
    reason = (request.POST if request.method == "POST" else request.GET).get("reason", "")
    if reason not in lifecycle.EXIT_STATES:
        raise InvalidInput(f"is one of: {', '.join(lifecycle.EXIT_STATES)}", field="reason")
    if request.method == "POST":
        target = lifecycle.leave(assignment, reason)
        if target:
            return redirect(target)
        assignment.refresh_from_db()
    return render(request, "crowd/leave.html", {"assignment": assignment, "task": assignment.batch.task,
                                                "reason": reason, "left": assignment.ended})


@csrf_exempt  # the platform signs its requests (crowd.platform.verify); it has no session and no CSRF token
@require_POST
def webhook(request, pk: int):
    answer = platform.receive(pk, request.headers, request.body)
    return JsonResponse(answer.body, status=answer.status)


def profile(request, username: str):
    """Badges, streaks and figures of a person on the tasks the viewer may see."""
    person = get_object_or_404(get_user_model(), username=username)
    tasks = visible_tasks(request.user)
    held = Badge.objects.filter(user=person, task__in=tasks).select_related("task").order_by("task__name", "code")
    rows = {}
    for badge in held:
        rows.setdefault(badge.task, []).append(badges.describe(badge))
    worked = tasks.filter(rounds__examples__author=person).distinct()
    figures = [{"task": t, **Example.objects.filter(round__task=t, author=person).figures(),
                "standing": gold.standing(t, person) if request.user == person or roles.can_manage(request.user, t)
                else None} for t in worked]
    return render(request, "crowd/profile.html", {"person": person, "badges": rows, "figures": figures,
                                                  "is_self": request.user == person})
