"""`{% load roles_tags %}{% task_roles task as roles %}`: the viewer's roles on a task, so a page's links
show only what the viewer may open (the rule is `tasks.roles.has_role`)."""

from __future__ import annotations

from django import template

from tasks import roles

register = template.Library()


@register.simple_tag(takes_context=True)
def task_roles(context, task) -> set[str]:
    request = context.get("request")
    return roles.role_names(request.user, task) if request is not None and task is not None else set()
