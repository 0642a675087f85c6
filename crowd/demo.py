"""The demo's quizzes: `manage.py load_demo` (tasks) sends `demo_task_loaded` for each demo task, and
this makes the quizzes its JSON lists under "quizzes" (idempotent: an existing quiz is left alone)."""

from __future__ import annotations

from typing import Any

from crowd import quizzes
from crowd.models import Quiz


def load_quizzes(sender, task, data: dict[str, Any], **kwargs) -> None:
    for role, spec in (data.get("quizzes") or {}).items():
        if Quiz.objects.filter(task=task, role=role).exists():
            continue
        quiz = quizzes.ensure_quiz(task, role)
        quizzes.configure(quiz, pass_mark=spec.get("pass_mark", 0.75), max_attempts=spec.get("max_attempts", 3),
                          active=True)
        for item in spec["items"]:
            quizzes.add_item(quiz, context=item.get("context", {}), input=item["input"], answer=item["answer"],
                             proposed=item.get("proposed"), explanation=item.get("explanation", ""), source="demo")
