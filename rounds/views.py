"""Pages: the owner console, pipeline progress, leaderboard, dashboard and model uploads.

A task's console is split in sections, one page each (`rounds/_console_nav.html`): overview and rounds
(here), settings and import (the tasks app's pages), crowd (the crowd app's), and health (here; the
site-wide service checks join it)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotation.models import Example
from dynabench_site import bodylimit
from dynabench_site.pages import back_url, returns_to
from dynabench_site.params import whole_number
from modelzoo.services import active_members
from rounds import dashboard, dynaboard, leaderboard, predictions, preview, services, uploads
from rounds.forms import DynascoreForm, UploadForm
from rounds.models import PipelineRun, ResearcherModel
from rounds.pipeline import is_stale, snapshot
from tasks import roles
from tasks.access import task_for
from tasks.models import Task


@login_required
def console(request):
    tasks = Task.objects.all() if roles.is_admin(request.user) else request.user.owned_tasks.all()
    return render(request, "rounds/console.html", {"tasks": tasks.prefetch_related("rounds"),
                                                   "can_create": roles.is_admin(request.user)})


def console_context(task: Task, **extra: Any) -> dict[str, Any]:
    runs = list(PipelineRun.objects.filter(task=task).select_related("from_round", "to_round")[:10])
    return {
        "task": task, "rounds": dashboard.round_figures(task), "runs": runs,
        "unfinished": services.unfinished_run(task), "current": task.current_round,
        "uploads": ResearcherModel.objects.filter(task=task).select_related("uploaded_by", "model_version"),
        "retrain_upload_id": uploads.trains_from(task),
        **extra,
    }


@login_required
def task_console(request, slug: str):
    """The overview: the open round, the models in the loop, the last pipeline job, and where to go next."""
    task = task_for(request, slug, roles.OWNER)
    return render(request, "rounds/task_console.html", console_context(task, health=task_health(task)))


@login_required
@returns_to("rounds-task-console", "slug")
def console_rounds(request, slug: str):
    """The rounds: their figures, the pipeline jobs, the researchers' models, and closing the open round
    after a confirmation that says what closing will do (a POST here starts the pipeline)."""
    task = task_for(request, slug, roles.OWNER)
    if request.method == "POST":
        options = {"retrain_without_new_data": True} if request.POST.get("retrain_without_new_data") else {}
        run = services.start_pipeline(task, request.user, options, description=request.POST.get("description", ""))
        return redirect("rounds-job", pk=run.pk)
    unfinished = services.unfinished_run(task)
    context = console_context(task, preview=None if unfinished else preview.close_preview(task))
    return render(request, "rounds/console_rounds.html", context)


@login_required
def console_health(request, slug: str):
    """What works for this task now (models in the loop, scoring); the site's service checks join here."""
    task = task_for(request, slug, roles.OWNER)
    return render(request, "rounds/console_health.html", {"task": task, "health": task_health(task)})


def task_health(task: Task) -> dict[str, Any]:
    round_ = task.current_round
    examples = Example.objects.filter(round=round_) if round_ else Example.objects.none()
    return {
        "round": round_, "members": active_members(round_),
        "pending": examples.filter(scoring_state=Example.Scoring.PENDING).count(),
        "failed": examples.filter(scoring_state=Example.Scoring.FAILED).count(),
        "last_run": (last := PipelineRun.objects.filter(task=task).first()),
        "run_stuck": last is not None and is_stale(last),
        "stuck_uploads": [u for u in ResearcherModel.objects.filter(
            task=task, status__in=[ResearcherModel.Status.EVALUATING, ResearcherModel.Status.FAILED])
            if u.status == ResearcherModel.Status.FAILED or uploads.is_stuck(u)],
    }


def owned_run(request, pk: int) -> PipelineRun:
    run = get_object_or_404(PipelineRun.objects.select_related("task"), pk=pk)
    if not roles.can_manage(request.user, run.task):
        raise PermissionDenied("Only the task's owners and admins may see its pipeline jobs.")
    return run


@login_required
def job(request, pk: int):
    run = owned_run(request, pk)
    return render(request, "rounds/job.html", {"run": run, "task": run.task, "job": snapshot(run)})


@login_required
@require_POST
@returns_to("rounds-job", "pk")
def job_action(request, pk: int, action: str):
    run = owned_run(request, pk)
    act = {"retry": services.retry_pipeline, "abandon": services.abandon_pipeline,
           "approve": services.approve_pipeline, "discard": services.discard_pipeline}[action]
    act(run, request.user)
    done = {"retry": _("Pipeline #%(id)s queued again."), "abandon": _("Pipeline #%(id)s abandoned."),
            "approve": _("Pipeline #%(id)s approved: the new ensemble will be deployed."),
            "discard": _("Pipeline #%(id)s discarded: the next round keeps the live ensemble.")}[action]
    messages.success(request, done % {"id": run.pk})
    return redirect("rounds-job", pk=run.pk)


@login_required
@require_POST
@returns_to()  # the page the form is on (its `next`): the console's rounds page or the upload page
def upload_action(request, pk: int, action: str):
    upload = get_object_or_404(ResearcherModel.objects.select_related("task"), pk=pk)
    if not roles.can_manage(request.user, upload.task):
        raise PermissionDenied("Only the task's owners and admins may retry or abandon a model's evaluation.")
    act = uploads.retry_evaluation if action == "retry" else uploads.abandon_evaluation
    act(upload, request.user)
    done = _("%(name)s: evaluation queued again.") if action == "retry" else _("%(name)s: evaluation abandoned.")
    messages.success(request, done % {"name": upload.name})
    return redirect(back_url(request, reverse("rounds-console-rounds", args=[upload.task.slug])))


def arena_instead(task: Task):
    """A generative (chat) task has no encoder models to rank on test sets: its targets are ranked in the arena."""
    return redirect("chat-arena", slug=task.slug) if task.kind_impl.generative else None


def leaderboard_page(request, slug: str):
    """The leaderboard. Viewers may rank it with their own Dynascore weights (`?performance=4&throughput=1&...`):
    the URL is the view, so it can be shared; bad weights answer 400 with the board under the owner's weights and
    a message per bad parameter. Owners and admins save the weights every viewer starts from (POST)."""
    task = task_for(request, slug)
    if (arena := arena_instead(task)) is not None:
        return arena
    can_manage = roles.can_manage(request.user, task)
    owner_weights = task.typed_config.dynascore.model_dump()
    form = DynascoreForm(request.POST or None, initial=owner_weights)
    if request.method == "POST":
        if not can_manage:
            raise PermissionDenied("Only the task's owners and admins may set the Dynascore weights.")
        if form.is_valid():
            task.config = {**task.config, "dynascore": form.cleaned_data}
            task.save()
            messages.success(request, _("Dynascore weights saved."))
            return redirect("rounds-leaderboard", slug=task.slug)
    weight_errors: dict[str, str] = {}
    try:
        weights = dynaboard.viewer_weights(request.GET, owner_weights)
    except dynaboard.WeightsError as error:
        weights, weight_errors = None, error.errors
    board = leaderboard.leaderboard(task, weights, predictions.leaderboard_rows)
    base = reverse("rounds-leaderboard", args=[task.slug])
    shown = board["weights"]
    share = f"{base}?{urlencode({m: f'{shown[m]:g}' for m in dynaboard.METRICS})}"
    predictions_upload_url = reverse("rounds-predictions-upload", args=[task.slug])
    context = {"task": task, "board": board, "can_manage": can_manage, "form": form,
               "can_upload": uploads.can_upload(request.user, task), "retrain_upload_id": uploads.trains_from(task),
               "weight_errors": weight_errors, "viewer_fields": [(m, shown[m]) for m in dynaboard.METRICS],
               "share_url": request.build_absolute_uri(share), "reset_url": base,
               "predictions_upload_url": predictions_upload_url}
    return render(request, "rounds/leaderboard.html", context, status=400 if weight_errors else 200)


def dashboard_page(request, slug: str):
    task = task_for(request, slug)
    if (arena := arena_instead(task)) is not None:
        return arena
    data = dashboard.dashboard(task, whole_number(request.GET.get("round"), "round"))
    return render(request, "rounds/dashboard.html", {"task": task, "data": data, "charts": dashboard.charts(data),
                                                     "round_over_round": dashboard.round_over_round(task),
                                                     "arms": dashboard.arms_section(task, request.user, data["round"]
                                                                                    if request.GET.get("round") else None)})


@login_required
def model_upload(request, slug: str):
    task = task_for(request, slug, roles.RESEARCHER)
    if task.kind_impl.generative:
        messages.info(request, _("A chat task's models are the language models in its settings: uploaded encoder models "
                                 "have nothing to answer here. Its targets are ranked in the arena."))
        return arena_instead(task)
    form = UploadForm(request.POST or None)
    errors: list[str] = []
    if request.method == "POST" and (too_large := bodylimit.refusal(request)):  # stopped at the cap: nothing stored
        return render(request, "rounds/model_upload.html", upload_context(request, task, form, [too_large]), status=413)
    if request.method == "POST" and form.is_valid():
        try:
            upload = uploads.submit(task, request.user, form.cleaned_data["name"], request.FILES.getlist("files"),
                                    form.cleaned_data["description"])
        except uploads.UploadRefused as exc:  # not a bare translation: the form lists every problem
            errors = exc.errors
        else:
            messages.success(request, _("%(name)s was accepted; it is being evaluated on every test set.")
                             % {"name": upload.name})
            return redirect("rounds-leaderboard", slug=task.slug)
    return render(request, "rounds/model_upload.html", upload_context(request, task, form, errors),
                  status=400 if errors or form.errors else 200)


def upload_context(request, task: Task, form: UploadForm, errors: list[str]) -> dict[str, Any]:
    mine = ResearcherModel.objects.filter(task=task, uploaded_by=request.user)
    return {"task": task, "form": form, "errors": errors, "mine": mine, "max_mb": uploads.max_total_bytes() // uploads.MB,
            "can_manage": roles.can_manage(request.user, task)}


@login_required
@require_POST
@returns_to()  # the page the form is on (its `next`): the leaderboard or the console
def upload_include(request, pk: int):
    upload = get_object_or_404(ResearcherModel.objects.select_related("task"), pk=pk)
    uploads.set_in_next_ensemble(upload, request.user, request.POST.get("include") == "1")
    return redirect(back_url(request, reverse("rounds-leaderboard", args=[upload.task.slug])))


@login_required
@require_POST
@returns_to()  # the page the form is on (its `next`): the leaderboard or the console
def upload_retrain_from(request, pk: int):
    """Train the next round's models from an evaluated upload (its weights, a new head), or stop."""
    upload = get_object_or_404(ResearcherModel.objects.select_related("task"), pk=pk)
    on = request.POST.get("retrain_from") == "1"
    was = uploads.trains_from(upload.task) == upload.pk
    uploads.retrain_from(upload, request.user, on)
    if on:
        messages.success(request, _("The next round's models are trained from %(name)s (its weights; a new head "
                                    "for this task's labels).") % {"name": upload.name})
    elif was:
        messages.success(request, _("The next round's models are no longer trained from %(name)s: they start "
                                    "from the site's default encoder again.") % {"name": upload.name})
    else:
        messages.info(request, _("The next round was not training from %(name)s; nothing changed.")
                      % {"name": upload.name})
    return redirect(back_url(request, reverse("rounds-leaderboard", args=[upload.task.slug])))
