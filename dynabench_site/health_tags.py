"""`{% load health %}{% site_health %}`: the `/healthz` checks in a page (the owner console's health section).

Registered as the template library "health" in settings.TEMPLATES (the kernel package is not an app)."""

from __future__ import annotations

from django import template

from dynabench_site import health

register = template.Library()


@register.inclusion_tag("site/_health.html")
def site_health():
    return {"report": health.report()}


@register.filter
def check_label(name: str) -> str:
    return health.label(name)
