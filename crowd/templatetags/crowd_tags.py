"""`{% load crowd_tags %}{% crowd_actions task %}`: on the task page, the guidelines, the quizzes the viewer
may take to qualify, and their examples (the tasks app renders the page without importing crowd)."""

from __future__ import annotations

from typing import Any

from django import template

from crowd import quizzes
from crowd.models import Quiz
from tasks import guidelines, roles

register = template.Library()


def offers_for(user, task) -> list[dict[str, Any]]:
    """The quizzes `user` may take on `task` to gain a role they lack: [{"role", "label", "left"}]."""
    offers: list[dict[str, Any]] = []
    if user.is_authenticated and not roles.can_manage(user, task):  # owners need no quiz on their own task
        for role, label in Quiz.Role.choices:
            quiz = quizzes.quiz_for(task, role)
            if quiz is not None and not roles.has_role(user, role, task) and not roles.is_suspended(user, task):
                offers.append({"role": role, "label": label.lower(), "left": quizzes.attempts_left(quiz, user)})
    return offers


@register.inclusion_tag("crowd/_task_actions.html", takes_context=True)
def crowd_actions(context, task) -> dict[str, Any]:
    user = context["request"].user
    return {"task": task, "user": user, "offers": offers_for(user, task), "guidelines": guidelines.current(task),
            "pending": guidelines.pending(user, task), "suspended": roles.is_suspended(user, task)}


@register.simple_tag(takes_context=True)
def quiz_offers(context, task) -> list[dict[str, Any]]:
    """`{% quiz_offers task as offers %}`: the quizzes the viewer may take on `task` (the welcome page)."""
    return offers_for(context["request"].user, task)
