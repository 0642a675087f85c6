"""Pages of tasks: the list, a task's page, sign-up, and the owner's task creation, settings and import
(linked from the owner console)."""

from __future__ import annotations

import io
from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts import services as accounts
from accounts import throttles
from dynabench_site import bodylimit
from dynabench_site.pages import back_url, refused_form, returns_to, throttled_page
from dynabench_site.params import whole_number
from tasks import guidelines, roles
from tasks.access import refusal, task_for, visible_tasks
from tasks.config_form import ConfigForm
from tasks.forms import GuidelinesForm, ImportForm, SettingsForm, SignupForm, TaskCreateForm
from tasks.importing import ImportFailed, ImportSpec, import_lines
from tasks.kinds import KINDS
from tasks.services import create_task


def home(request):
    """What the platform is for, how a round works, each task with its live figures and what the viewer may
    do on it. Figures come from template tags of the apps that own them (example_figures), not from here."""
    tasks = visible_tasks(request.user).prefetch_related("rounds")
    rows = [{"task": t, "round": t.current_round, "roles": roles.role_names(request.user, t)} for t in tasks]
    may = set().union(*(row["roles"] for row in rows)) if rows else set()
    return render(request, "tasks/home.html", {"rows": rows, "may": may})


def task_detail(request, slug: str):
    task = task_for(request, slug)
    context = {"task": task, "config": task.typed_config, "roles": roles.role_names(request.user, task)}
    return render(request, "tasks/task_detail.html", context)


def signup(request):
    """A new account writes examples at once (where the task asks no quiz); it validates a task only after
    passing the task's validator quiz. The address it came from is kept for the sybil rule; SIGNUP_RATE
    accounts per address (over it: the form again, with the message, 429)."""
    form = SignupForm(request.POST or None)
    if request.method == "POST":
        ip = accounts.client_ip(request)
        wait = throttles.signup_wait(ip)
        if wait is not None:
            context = {"form": refused_form(form, throttles.refusal(wait))}
            return throttled_page(request, "registration/signup.html", context, wait)
        if form.is_valid():
            with transaction.atomic():
                user = form.save()
                roles.grant(user, *roles.SIGNUP_ROLES)
                accounts.record_signup(user, ip)
            throttles.count_signup(ip)
            login(request, user)
            return redirect("welcome")
    return render(request, "registration/signup.html", {"form": form}, status=400 if form.errors else 200)


@login_required
def welcome(request):
    """After sign-up: what a new account can do next, task by task (guidelines, quizzes, writing)."""
    tasks = visible_tasks(request.user).prefetch_related("rounds")
    rows = [{"task": t, "round": t.current_round, "roles": roles.role_names(request.user, t),
             "guidelines": guidelines.current(t)} for t in tasks]
    return render(request, "registration/welcome.html", {"rows": rows})


# --- guidelines ----------------------------------------------------------------------------------


def guidelines_page(request, slug: str):
    task = task_for(request, slug)
    context = {"task": task, "current": guidelines.current(task), "pending": guidelines.pending(request.user, task),
               "next": request.GET.get("next", "")}
    return render(request, "tasks/guidelines.html", context)


@login_required
@require_POST
@returns_to("tasks-guidelines", "slug")
def acknowledge_guidelines(request, slug: str):
    task = task_for(request, slug)
    version = request.POST.get("version", "")
    guidelines.acknowledge(request.user, task, whole_number(version, "version") or 0)
    messages.success(request, _("Thank you: you have read the current guidelines."))
    target = back_url(request, None)
    return redirect(target) if target else redirect("task-detail", slug=slug)


@login_required
def guidelines_edit(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    latest = guidelines.current(task)
    form = GuidelinesForm(request.POST or None, initial={"text": latest.text if latest else ""})
    if request.method == "POST" and form.is_valid():
        saved = guidelines.publish(task, form.cleaned_data["text"], by=request.user)
        changed = latest is None or saved.version != latest.version
        messages.success(request, _("Guidelines version %(version)s published; workers acknowledge it before "
                                   "they continue.") % {"version": saved.version} if changed
                     else _("Nothing changed: the guidelines stay as they were."))
        return redirect("tasks-guidelines-edit", slug=task.slug)
    versions = task.guidelines.select_related("created_by")
    return render(request, "tasks/guidelines_edit.html", {"task": task, "form": form, "versions": versions},
                  status=400 if form.errors else 200)


# --- the owner's pages ---------------------------------------------------------------------------


@login_required
def task_create(request):
    if not roles.is_admin(request.user):
        raise PermissionDenied(refusal(roles.ADMIN))
    form = TaskCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        task = create_task(slug=data["slug"], name=data["name"], kind=data["kind"], config=data["config"],
                           owners=[request.user], visibility=data["visibility"])
        messages.success(request, _("Task %(name)s created. Import its data, then open round 1.") % {"name": task.name})
        return redirect("rounds-task-console", slug=task.slug)
    presets = {name: kind.default_config() for name, kind in KINDS.items()}
    return render(request, "tasks/task_create.html", {"form": form, "presets": presets},
                  status=400 if form.errors else 200)


@login_required
def task_settings(request, slug: str):
    """The settings as a form generated from the kind's schema; the raw JSON stays as an advanced form
    (a POST with `config` is that form)."""
    task = task_for(request, slug, roles.OWNER)
    posted = request.POST if request.method == "POST" else None
    advanced = posted is not None and "config" in posted
    form = ConfigForm(None if advanced else posted, task=task)
    json_form = SettingsForm(posted if advanced else None, task=task)
    bound = json_form if advanced else form
    if posted is not None and bound.is_valid():
        task.name, task.config = bound.cleaned_data["name"], bound.cleaned_data["config"]
        task.save()
        messages.success(request, _("Settings saved."))
        return redirect("tasks-settings", slug=task.slug)
    context = {"task": task, "form": form, "json_form": json_form, "advanced": advanced,
               "errors": json_errors(json_form) if advanced else form.error_list()}
    return render(request, "tasks/task_settings.html", context, status=400 if bound.errors else 200)


def json_errors(form: SettingsForm) -> list[dict[str, str]]:
    return [{"id": form[name].id_for_label, "label": form.fields[name].label, "message": str(message)}
            for name, messages in form.errors.items() if name in form.fields for message in messages]


@login_required
def task_import(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    form = ImportForm(request.POST or None, request.FILES or None)
    context: dict[str, Any] = {"task": task, "form": form}
    if request.method == "POST" and (too_large := bodylimit.refusal(request)):  # stopped at the cap: nothing stored
        return render(request, "tasks/task_import.html", {**context, "form": refused_form(form, too_large)}, status=413)
    if request.method != "POST" or not form.is_valid():
        return render(request, "tasks/task_import.html", context, status=400 if form.errors else 200)
    try:
        context["report"] = import_lines(task, uploaded_lines(form.cleaned_data["file"]), import_spec(form.cleaned_data))
    except ImportFailed as exc:  # not a bare translation: the page lists every bad row
        context.update(report=exc.report, failed=True)
        return render(request, "tasks/task_import.html", context, status=exc.status_code)
    return render(request, "tasks/task_import.html", context)


def uploaded_lines(file) -> list[tuple[int, str]]:
    text = io.TextIOWrapper(file.file, encoding="utf-8", errors="replace")
    return [(n, line) for n, line in enumerate(text, start=1) if line.strip()]


def import_spec(data: dict[str, Any]) -> ImportSpec:
    target = data["target"]
    split = "train" if target == "pool" else data["split"]
    kwargs = {"target": target, "collection": data["collection"], "split": split, "source": "console",
              "skip_errors": data["skip_errors"]}
    return ImportSpec.from_preset(data["preset"], **kwargs) if data["preset"] else ImportSpec(**kwargs)
