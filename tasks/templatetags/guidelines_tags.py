"""`{% load guidelines_tags %}{% guidelines_panel task %}`: the task's instructions and guidelines on the
write, validate and expert pages, with the acknowledgement form while the current version is unread."""

from __future__ import annotations

from typing import Any

from django import template

from tasks import guidelines

register = template.Library()


@register.inclusion_tag("tasks/_guidelines_panel.html", takes_context=True)
def guidelines_panel(context, task, with_instructions: bool = True) -> dict[str, Any]:
    request = context["request"]
    return {
        "task": task,
        "instructions": task.typed_config.instructions if with_instructions else "",
        "current": guidelines.current(task),
        "pending": guidelines.pending(request.user, task),
        "next": request.get_full_path(),
        "csrf_token": context.get("csrf_token"),
    }
