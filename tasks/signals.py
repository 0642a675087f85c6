"""Signals of the tasks app. Apps above it react without tasks importing them."""

from django.dispatch import Signal

# Sent by `manage.py load_demo` once per demo task, with `task` and `data` (the parsed tasks/demo/*.json):
# the crowd app creates the demo quizzes from `data["quizzes"]`.
demo_task_loaded = Signal()

# Sent by `tasks.round_state.transition` inside its transaction, with `round_` (moved) and `status` (its new status:
# "open" or "closed"): notify turns it into the round_opened / round_closed events.
round_changed = Signal()
