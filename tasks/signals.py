"""Signals of the tasks app. Apps above it react without tasks importing them."""

from django.dispatch import Signal

# Sent by `manage.py load_demo` once per demo task, with `task` and `data` (the parsed tasks/demo/*.json):
# the crowd app creates the demo quizzes from `data["quizzes"]`.
demo_task_loaded = Signal()
