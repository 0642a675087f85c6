"""The create page: server-rendered, with create.js calling the same API the services back."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from annotation import services
from tasks import roles
from tasks.access import task_for
from tasks.models import Task


def page_config(task: Task, round_number: int | None) -> dict[str, Any]:
    """What create.js needs to know about the task (passed with json_script), API addresses included."""
    config = task.typed_config
    return {
        "urls": api_urls(task),
        "slug": task.slug,
        "kind": task.kind,
        "answer_is_span": task.kind_impl.answer_is_span,
        "labels": list(getattr(config, "labels", [])),
        "input_fields": list(config.input_fields),
        "context_fields": list(config.context_fields),
        "max_input_chars": config.max_input_chars,
        "round": round_number,
    }


def api_urls(task: Task) -> dict[str, str]:
    return {
        "next_context": reverse("api-context-next", args=[task.slug]),
        "submit": reverse("api-example-create", args=[task.slug]),
        "inspiration": reverse("api-inspiration", args=[task.slug]),
        "my_stats": f"{reverse('api-my-stats')}?{urlencode({'task': task.slug})}",
    }


def context_rows(task: Task, context) -> list[tuple[str, str]]:
    if context is None:
        return []
    return [(name, str(context.payload.get(name, ""))) for name in task.typed_config.context_fields]


@login_required
def create(request, slug: str):
    task = task_for(request, slug, roles.ANNOTATOR)
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
