"""A task's texts as people read them, for the pages of the apps below the study app (task page, guidelines):
the owner's translation into the reader's language where one exists, else the text as written.

The translations are the study app's (study.texts, registered in StudyConfig.ready: tasks may not import study);
without a provider every text reads as written. Templates: `{% load task_texts %}`,
`{% task_text task "instructions" config.instructions as shown %}`, `{% label_name task label %}`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zoo.registry import Registry

Provider = Callable[[Any, str, str, "str | None"], str]  # (task, field, default, language) -> text
PROVIDERS: Registry[Provider] = Registry("task text provider")


def register(name: str, provider: Provider) -> None:
    PROVIDERS.register(name, provider, replace=True)


def text(task, field: str, default: str, language: str | None = None) -> str:
    for provider in PROVIDERS.values():
        return provider(task, field, default, language)
    return default
