"""Registry of task kinds. Adding a kind is adding one module and one line here.

`is_fooled` is where the kind's "fooled" rule is applied to a task: every caller goes through it (scoring, the
sandbox, the writing assistant's candidates, the language model opponent, `simulate_rounds`' held-out error).
"""

from __future__ import annotations

from typing import Any, Protocol

from tasks.kinds.base import InputError, TaskConfig, TaskKind
from tasks.kinds.chat import ChatKind
from tasks.kinds.classification import ClassificationKind
from tasks.kinds.hate_speech import HateSpeechKind
from tasks.kinds.nli import NLIKind
from tasks.kinds.qa import QAKind
from tasks.kinds.sentiment import SentimentKind
from zoo.registry import Registry

KINDS: Registry[TaskKind] = Registry("task kind")
for _kind in (SentimentKind(), NLIKind(), HateSpeechKind(), QAKind(), ClassificationKind(), ChatKind()):
    KINDS.register(_kind.name, _kind)


def get_kind(name: str) -> TaskKind:
    return KINDS.lookup(name)


class HasKind(Protocol):
    """A task (`tasks.models.Task`, not imported here: the models import this package)."""

    @property
    def kind_impl(self) -> TaskKind: ...

    @property
    def typed_config(self) -> TaskConfig: ...


def is_fooled(task: HasKind, target: Any, prediction: dict[str, Any]) -> bool:
    """Whether `prediction` (the ensemble's, or one model's) fools the model on `target`: the task kind's rule
    (`TaskKind.is_fooled`) under the task's settings. The one place the rule is applied."""
    return task.kind_impl.is_fooled(task.typed_config, target, prediction)


def kind_choices() -> list[tuple[str, str]]:
    return [(kind.name, kind.label) for kind in KINDS.values()]


__all__ = ["KINDS", "InputError", "TaskConfig", "TaskKind", "get_kind", "is_fooled", "kind_choices"]
