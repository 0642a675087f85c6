"""Pages: the owner console's Datasets page, and the publish form of the datasets section (on the task page and
that console page; downloads themselves use the API)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from dynabench_site.pages import back_url, returns_to
from exports import services
from exports.models import DatasetSnapshot
from tasks import roles
from tasks.access import task_for
from tasks.roles import can_manage


@login_required
def console(request, slug: str):
    """The owner console's Datasets section: per round, what is published, and what publishing now would give."""
    task = task_for(request, slug, roles.OWNER)
    return render(request, "exports/console.html", {"task": task})


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
    counts = snapshot.counts
    rows = _("%(rows)s rows (train %(train)s, dev %(dev)s, test %(test)s), %(validated)s validated") % {
        "rows": snapshot.rows, "train": counts.get("train", 0), "dev": counts.get("dev", 0),
        "test": counts.get("test", 0), "validated": snapshot.validated_rows}
    if created:
        warnings = services.publish_warnings(round, services.splits.publish_preview(round))
        messages.success(request, _("Published round %(round)s as version %(version)s: %(rows)s.")
                         % {"round": round.number, "version": snapshot.version, "rows": rows}
                         + "".join(f" {w}" for w in warnings))
    else:
        messages.info(request, _("Nothing changed since version %(version)s; no new version was made.")
                      % {"version": snapshot.version})
    return redirect(back_url(request, reverse("task-detail", args=[slug]) + "#downloads"))
