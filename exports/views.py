"""Pages: the publish form of the task page's downloads section (downloads themselves use the API)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from dynabench_site.pages import returns_to
from exports import services
from exports.models import DatasetSnapshot
from tasks.access import task_for
from tasks.roles import can_manage


@login_required
@require_POST
@returns_to("task-detail", "slug", say="Not published: {error}")
def publish(request, slug: str, number: int):
    task = task_for(request, slug)
    if not can_manage(request.user, task):
        raise Http404
    round = get_object_or_404(task.rounds, number=number)
    audience = request.POST.get("audience", DatasetSnapshot.Audience.RESEARCHERS)
    snapshot, created = services.publish_snapshot(round, request.user, audience=audience)
    if created:
        messages.success(request, f"Published round {round.number} as version {snapshot.version}.")
    else:
        messages.info(request, f"Nothing changed since version {snapshot.version}; no new version was made.")
    return redirect("task-detail", slug=slug)
