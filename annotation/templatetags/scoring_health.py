"""`{% load scoring_health %}{% task_scoring task as scoring %}`: the console's health page, scoring card."""

from __future__ import annotations

from typing import Any

from django import template

from annotation import scoring_health

register = template.Library()


@register.simple_tag
def task_scoring(task) -> dict[str, Any]:
    return scoring_health.task_summary(task)
