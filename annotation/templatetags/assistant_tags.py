"""The writing assistant on a page: `{% warm_assistant task %}` where a page offers it (the create page), so the
local language model is loaded, and the task's prompt read, while the writer reads the context
(`annotation.assistant.warm_up`: a background thread, once per process and task; renders nothing)."""

from __future__ import annotations

from django import template

from annotation import assistant

register = template.Library()


@register.simple_tag
def warm_assistant(task) -> str:
    assistant.warm_up(task)
    return ""
