from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def label_text(value: Any) -> str:
    """A label or prediction as people read it: a class name, or the text of a QA answer."""
    if value is None or value == "":
        return "—"
    if isinstance(value, dict):
        return str(value.get("label", value.get("text", value)))
    return str(value)
