"""The create page: server-rendered, with create.js calling the same API the services back."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render

from annotation import services
from tasks import roles
from tasks.models import Task


def page_config(task: Task, round_number: int | None) -> dict[str, Any]:
    """What create.js needs to know about the task (passed with json_script)."""
    config = task.typed_config
    return {
        "slug": task.slug,
        "kind": task.kind,
        "head": task.kind_impl.head,
        "labels": list(getattr(config, "labels", [])),
        "input_fields": list(config.input_fields),
        "context_fields": list(config.context_fields),
        "max_input_chars": config.max_input_chars,
        "round": round_number,
    }


def context_rows(task: Task, context) -> list[tuple[str, str]]:
    if context is None:
        return []
    return [(name, str(context.payload.get(name, ""))) for name in task.typed_config.context_fields]


@login_required
def create(request, slug: str):
    task = get_object_or_404(Task.objects.visible_to(request.user).filter(active=True), slug=slug)
    if not roles.has_role(request.user, roles.ANNOTATOR, task):
        raise PermissionDenied("Only annotators may write examples.")
    round = task.current_round
    context = services.next_context(task, round) if round is not None else None
    return render(
        request,
        "annotation/create.html",
        {
            "task": task,
            "task_config": task.typed_config,
            "round": round,
            "context": context,
            "context_rows": context_rows(task, context),
            "config": page_config(task, round.number if round else None),
            "figures": services.writer_figures(request.user, task),
        },
    )
