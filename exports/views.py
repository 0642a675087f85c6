"""Pages: the publish form of the task page's downloads section (downloads themselves use the API)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from exports import access, services
from exports.models import DatasetSnapshot
from tasks.models import Task


@login_required
@require_POST
def publish(request, slug: str, number: int):
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    if not access.can_manage(request.user, task):
        raise Http404
    round = get_object_or_404(task.rounds, number=number)
    audience = request.POST.get("audience", DatasetSnapshot.Audience.RESEARCHERS)
    try:
        snapshot, created = services.publish_snapshot(round, request.user, audience=audience)
    except services.ExportError as exc:
        messages.error(request, f"Not published: {exc}")
        return redirect("task-detail", slug=slug)
    if created:
        messages.success(request, f"Published round {round.number} as version {snapshot.version}.")
    else:
        messages.info(request, f"Nothing changed since version {snapshot.version}; no new version was made.")
    return redirect("task-detail", slug=slug)
