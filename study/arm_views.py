"""The owner's pages for a study's arms (study.arms), in the study console: the list with the assignment's settings
(set on the study console's own page) and a form to add an arm, and one page per arm to change or delete it. Owners and admins only (tasks.access.task_for with the owner role);
a refused form comes back to its page with the reason (dynabench_site.pages.returns_to)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from dynabench_site.pages import returns_to
from modelzoo.models import Ensemble
from study import arms
from study.models import Arm
from tasks import roles
from tasks.access import task_for

BOOLEANS = ("assistant", "model_in_loop", "active")


def ensembles(task) -> list[dict[str, Any]]:
    """The task's ensembles an arm may target, newest first, named by round, members and whether live."""
    rows = []
    for ensemble in (Ensemble.objects.filter(round__task=task).select_related("round")
                     .prefetch_related("memberships__model_version").order_by("-round__number", "-created_at")):
        members = [m.model_version.name for m in sorted(ensemble.memberships.all(), key=lambda m: m.position)]
        rows.append({"id": ensemble.pk, "round": ensemble.round.number, "members": members, "active": ensemble.active})
    return rows


def form_data(post, *, new: bool) -> dict[str, Any]:
    """An arm's fields as the form sends them (a checkbox left unticked is absent: false)."""
    data: dict[str, Any] = {name: post.get(name, "") for name in ("name", "description", "weight", "ensemble")}
    if new:
        data["key"] = post.get("key", "")
    for name in BOOLEANS:
        data[name] = name in post
    return data


@login_required
def arms_page(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    study = arms.study_of(task)
    return render(request, "study/arms.html", {
        "task": task, "study": study, "arms": arms.arms_of(task), "ensembles": ensembles(task),
        "block_repeats": arms.BLOCK_REPEATS,
        "assigned": sum(arms.counts(task).values()),
    })


@login_required
@require_POST
@returns_to("study-arms", "slug", say="{error}")
def add(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    arm = arms.create_arm(task, form_data(request.POST, new=True))
    messages.success(request, _("Arm %(key)s added.") % {"key": arm.key})
    return redirect("study-arms", slug=task.slug)


@login_required
@require_http_methods(["GET", "POST"])
@returns_to("study-arm-edit", "slug", "pk", say="{error}")
def edit(request, slug: str, pk: int):
    task = task_for(request, slug, roles.OWNER)
    arm = get_object_or_404(Arm.objects.select_related("task"), pk=pk, task=task)
    if request.method == "POST":
        arms.update_arm(arm, form_data(request.POST, new=False))
        messages.success(request, _("Arm %(key)s saved.") % {"key": arm.key})
        return redirect("study-arms", slug=task.slug)
    used = arm.participants.exists() or arm.examples.exists()
    return render(request, "study/arms_edit.html", {"task": task, "arm": arm, "ensembles": ensembles(task),
                                                    "used": used})


@login_required
@require_POST
@returns_to("study-arm-edit", "slug", "pk", say="{error}")
def delete(request, slug: str, pk: int):
    task = task_for(request, slug, roles.OWNER)
    arm = get_object_or_404(Arm, pk=pk, task=task)
    arms.delete_arm(arm)
    messages.success(request, _("Arm %(key)s deleted.") % {"key": arm.key})
    return redirect("study-arms", slug=task.slug)
