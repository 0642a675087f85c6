"""Changing the Celery app's configuration at run time in tests, whatever the Celery version.

The app reads Django's settings under the CELERY namespace (`CELERY_TASK_ALWAYS_EAGER`, …). Celery 5.6 looks a
setting up by its namespaced key before its plain one, so `app.conf.update(task_always_eager=False)` alone changes
nothing there (5.7 reads the plain key first). `update` sets both spellings in the app's own layer of changes and
returns what `restore` needs to put that layer back as it was: a key the layer did not hold is removed again, so the
app reads Django's settings (restored by pytest-django) as before, whatever the test did to them meanwhile.
"""

from __future__ import annotations

from typing import Any

from dynabench_site.celery import app

_ABSENT = object()


def _keys(name: str) -> tuple[str, str]:
    return name, f"CELERY_{name.upper()}"


def update(**values: Any) -> dict[str, Any]:
    """Set each setting (plain names: broker_url, task_always_eager, …) under both spellings; returns the old layer."""
    changes = app.conf.changes
    saved: dict[str, Any] = {}
    for name in values:
        for key in _keys(name):
            saved[key] = changes.get(key, _ABSENT)
    app.conf.update(**{key: value for name, value in values.items() for key in _keys(name)})
    _reroute()
    return saved


def restore(saved: dict[str, Any]) -> None:
    changes = app.conf.changes
    for key, value in saved.items():
        if value is _ABSENT:
            changes.pop(key, None)
        else:
            changes[key] = value
    _reroute()


def _reroute() -> None:
    """The app's router keeps the task_routes it was built with: build it again from the current ones."""
    app.amqp.flush_routes()
    app.amqp.router = app.amqp.Router()
