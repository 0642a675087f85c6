from __future__ import annotations

from django.contrib.auth import login
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render

from annotation.models import Example
from tasks import roles
from tasks.forms import SignupForm
from tasks.models import Task
from validation.stats import task_stats


def home(request):
    tasks = Task.objects.visible_to(request.user).filter(active=True).prefetch_related("rounds")
    rows = [{"task": t, "figures": Example.objects.filter(round__task=t).figures(), "round": t.current_round} for t in tasks]
    return render(request, "tasks/home.html", {"rows": rows})


def task_detail(request, slug: str):
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    per_round = Example.objects.filter(round__task=task).figures_by("round__number")
    empty = Example.objects.none().figures()
    rounds = [{"round": r, "figures": per_round.get(r.number, empty)} for r in task.rounds.all()]
    return render(
        request,
        "tasks/task_detail.html",
        {
            "task": task,
            "config": task.typed_config,
            "rounds": rounds,
            "figures": Example.objects.filter(round__task=task).figures(),
            "roles": roles.role_names(request.user, task),
            "stats": task_stats(task),
        },
    )


def signup(request):
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            user = form.save()
            roles.grant(user, *roles.SIGNUP_ROLES)
        login(request, user)
        return redirect("home")
    return render(request, "registration/signup.html", {"form": form}, status=400 if form.errors else 200)
