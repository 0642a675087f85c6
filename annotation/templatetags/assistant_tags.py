"""The writing assistant on a page: `{% warm_assistant task %}` where a page offers it (the create page), so the
local language model is loaded, and the task's prompt read, while the writer reads the context
(`annotation.jobs.warm_assistant` → `annotation.assistant.warm_up`: a background thread, once per process and task,
where the suggest job runs in this process; renders nothing)."""

from __future__ import annotations

from django import template

from annotation import jobs

register = template.Library()


@register.simple_tag
def warm_assistant(task) -> str:
    jobs.warm_assistant(task)
    return ""
