"""`{% load task_texts %}`: a task's texts in the reader's language (tasks.texts: the owner's translations)."""

from __future__ import annotations

from django import template

from tasks import texts

register = template.Library()


@register.simple_tag
def task_text(task, field: str, default: str) -> str:
    """`{% task_text task "instructions" config.instructions as shown %}`: the translation, else `default`."""
    return texts.text(task, field, default or "")


@register.simple_tag
def label_name(task, label) -> str:
    """A label's display name in the reader's language (the label itself where untranslated)."""
    return texts.text(task, f"label:{label}", str(label))


@register.simple_tag
def label_names(task) -> dict[str, str]:
    """`{% label_names task as names %}`: label -> display name, for page scripts (json_script)."""
    return {str(label): texts.text(task, f"label:{label}", str(label))
            for label in getattr(task.typed_config, "labels", []) or []}
