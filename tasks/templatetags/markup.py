import markdown as md
import nh3
from django import template
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def markdown(text: str) -> str:
    """Task instructions are Markdown written by owners; render them, then sanitise the HTML."""
    return mark_safe(nh3.clean(md.markdown(text or "", extensions=["extra"])))


@register.filter
def percent(value) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


@register.filter
def answer_text(value) -> str:
    """A label or an answer as people read it: a class name, or the text of a QA answer."""
    if value is None or value == "":
        return "—"
    if isinstance(value, dict):
        return str(value.get("label", value.get("text", value)))
    return str(value)
