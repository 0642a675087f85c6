"""Pages: the owner console, pipeline progress, leaderboard, dashboard and model uploads."""

from __future__ import annotations

import io
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from rounds import dashboard, leaderboard, services, uploads
from rounds.forms import DynascoreForm, ImportForm, SettingsForm, TaskCreateForm, UploadForm
from rounds.models import PipelineRun, ResearcherModel
from rounds.options import BadOptions
from tasks import roles
from tasks.importing import ImportFailed, ImportSpec, import_lines
from tasks.kinds import KINDS
from tasks.models import Task
from tasks.services import create_task


def visible_task(request, slug: str) -> Task:
    return get_object_or_404(Task.objects.visible_to(request.user), slug=slug)


def owned_task(request, slug: str) -> Task:
    task = visible_task(request, slug)
    if not services.can_run_pipeline(request.user, task):
        raise PermissionDenied("Only the task's owners and admins may use its console.")
    return task


@login_required
def console(request):
    tasks = Task.objects.all() if roles.is_admin(request.user) else request.user.owned_tasks.all()
    return render(request, "rounds/console.html", {"tasks": tasks.prefetch_related("rounds"),
                                                   "can_create": roles.is_admin(request.user)})


@login_required
def task_create(request):
    if not roles.is_admin(request.user):
        raise PermissionDenied("Only admins may create tasks.")
    form = TaskCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        task = create_task(slug=data["slug"], name=data["name"], kind=data["kind"], config=data["config"],
                           owners=[request.user], visibility=data["visibility"])
        messages.success(request, f"Task {task.name} created. Import its data, then open round 1.")
        return redirect("rounds-task-console", slug=task.slug)
    presets = {name: kind.default_config() for name, kind in KINDS.items()}
    return render(request, "rounds/task_create.html", {"form": form, "presets": presets},
                  status=400 if form.errors else 200)


def console_context(task: Task, **extra: Any) -> dict[str, Any]:
    runs = list(PipelineRun.objects.filter(task=task).select_related("from_round", "to_round")[:10])
    return {
        "task": task, "rounds": dashboard.round_figures(task), "runs": runs,
        "unfinished": services.unfinished_run(task), "current": task.current_round,
        "settings_form": extra.pop("settings_form", None) or SettingsForm(task=task),
        "import_form": extra.pop("import_form", None) or ImportForm(),
        "uploads": ResearcherModel.objects.filter(task=task).select_related("uploaded_by", "model_version"),
        **extra,
    }


@login_required
def task_console(request, slug: str):
    task = owned_task(request, slug)
    return render(request, "rounds/task_console.html", console_context(task))


@login_required
@require_POST
def task_settings(request, slug: str):
    task = owned_task(request, slug)
    form = SettingsForm(request.POST, task=task)
    if not form.is_valid():
        return render(request, "rounds/task_console.html", console_context(task, settings_form=form), status=400)
    task.name, task.config = form.cleaned_data["name"], form.cleaned_data["config"]
    task.save()
    messages.success(request, "Settings saved.")
    return redirect("rounds-task-console", slug=task.slug)


@login_required
@require_POST
def task_import(request, slug: str):
    task = owned_task(request, slug)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, "rounds/task_console.html", console_context(task, import_form=form), status=400)
    try:
        report = import_lines(task, uploaded_lines(form.cleaned_data["file"]), import_spec(form.cleaned_data))
    except ImportFailed as exc:
        context = console_context(task, import_form=form, import_report=exc.report, import_failed=True)
        return render(request, "rounds/task_console.html", context, status=400)
    except ValueError as exc:
        form.add_error(None, str(exc))
        return render(request, "rounds/task_console.html", console_context(task, import_form=form), status=400)
    return render(request, "rounds/task_console.html", console_context(task, import_report=report))


def uploaded_lines(file) -> list[tuple[int, str]]:
    text = io.TextIOWrapper(file.file, encoding="utf-8", errors="replace")
    return [(n, line) for n, line in enumerate(text, start=1) if line.strip()]


def import_spec(data: dict[str, Any]) -> ImportSpec:
    target = "pool" if data["target"] == "pool" else data["target"]
    split = "train" if target == "pool" else data["split"]
    kwargs = {"target": target, "collection": data["collection"], "split": split, "source": "console",
              "skip_errors": data["skip_errors"]}
    return ImportSpec.from_preset(data["preset"], **kwargs) if data["preset"] else ImportSpec(**kwargs)


@login_required
@require_POST
def start_round(request, slug: str):
    task = owned_task(request, slug)
    try:
        run = services.start_pipeline(task, request.user, description=request.POST.get("description", ""))
    except (services.PipelineBusy, BadOptions) as exc:
        messages.error(request, str(exc))
        return redirect("rounds-task-console", slug=task.slug)
    return redirect("rounds-job", pk=run.pk)


def owned_run(request, pk: int) -> PipelineRun:
    run = get_object_or_404(PipelineRun.objects.select_related("task"), pk=pk)
    if not services.can_run_pipeline(request.user, run.task):
        raise PermissionDenied("Only the task's owners and admins may see its pipeline jobs.")
    return run


@login_required
def job(request, pk: int):
    run = owned_run(request, pk)
    from rounds.pipeline import snapshot

    return render(request, "rounds/job.html", {"run": run, "task": run.task, "job": snapshot(run)})


@login_required
@require_POST
def job_action(request, pk: int, action: str):
    run = owned_run(request, pk)
    act = services.retry_pipeline if action == "retry" else services.abandon_pipeline
    try:
        act(run, request.user)
    except services.PipelineBusy as exc:
        messages.error(request, str(exc))
    return redirect("rounds-job", pk=run.pk)


def leaderboard_page(request, slug: str):
    task = visible_task(request, slug)
    is_owner = services.can_run_pipeline(request.user, task)
    form = DynascoreForm(request.POST or None, initial=task.typed_config.dynascore.model_dump())
    if request.method == "POST":
        if not is_owner:
            raise PermissionDenied("Only the task's owners and admins may set the Dynascore weights.")
        if form.is_valid():
            task.config = {**task.config, "dynascore": form.cleaned_data}
            task.save()
            messages.success(request, "Dynascore weights saved.")
            return redirect("rounds-leaderboard", slug=task.slug)
    board = leaderboard.leaderboard(task)
    return render(request, "rounds/leaderboard.html", {"task": task, "board": board, "is_owner": is_owner,
                                                       "form": form, "can_upload": uploads.can_upload(request.user, task)})


def dashboard_page(request, slug: str):
    task = visible_task(request, slug)
    number = request.GET.get("round", "")
    data = dashboard.dashboard(task, int(number) if number.isdigit() else None)
    return render(request, "rounds/dashboard.html", {"task": task, "data": data, "charts": dashboard.charts(data)})


@login_required
def model_upload(request, slug: str):
    task = visible_task(request, slug)
    if not uploads.can_upload(request.user, task):
        raise PermissionDenied("Only researchers, task owners and admins may upload models.")
    form = UploadForm(request.POST or None)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            upload = uploads.submit(task, request.user, form.cleaned_data["name"], request.FILES.getlist("files"),
                                    form.cleaned_data["description"])
        except uploads.UploadRefused as exc:
            errors = exc.errors
        else:
            messages.success(request, f"{upload.name} was accepted; it is being evaluated on every test set.")
            return redirect("rounds-leaderboard", slug=task.slug)
    mine = ResearcherModel.objects.filter(task=task, uploaded_by=request.user)
    return render(request, "rounds/model_upload.html",
                  {"task": task, "form": form, "errors": errors, "mine": mine,
                   "max_mb": uploads.max_total_bytes() // uploads.MB}, status=400 if errors or form.errors else 200)


@login_required
@require_POST
def upload_include(request, pk: int):
    upload = get_object_or_404(ResearcherModel.objects.select_related("task"), pk=pk)
    try:
        uploads.set_in_next_ensemble(upload, request.user, request.POST.get("include") == "1")
    except PermissionError as exc:
        raise PermissionDenied(str(exc)) from None
    except uploads.UploadRefused as exc:
        messages.error(request, "; ".join(exc.errors))
    return redirect("rounds-leaderboard", slug=upload.task.slug)
