"""Registry of task kinds. Adding a kind is adding one module and one line here.

`decide` (the verdict seam, `tasks.kinds.verdict`) is where a verdict is decided for a task, by whoever its kind
says judges it (the kind's "fooled" rule, or people): every caller goes through it (scoring, the sandbox, the
writing assistant's candidates, the language model opponent, `simulate_rounds`' held-out error).
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy

from tasks.kinds.base import InputError, TaskConfig, TaskKind
from tasks.kinds.chat import ChatKind
from tasks.kinds.classification import ClassificationKind
from tasks.kinds.hate_speech import HateSpeechKind
from tasks.kinds.nli import NLIKind
from tasks.kinds.qa import QAKind
from tasks.kinds.sentiment import SentimentKind
from tasks.kinds.verdict import HasKind, Verdict, decide
from zoo.registry import Registry

KINDS: Registry[TaskKind] = Registry("task kind")
for _kind in (SentimentKind(), NLIKind(), HateSpeechKind(), QAKind(), ClassificationKind(), ChatKind()):
    KINDS.register(_kind.name, _kind)


def get_kind(name: str) -> TaskKind:
    return KINDS.lookup(name)


def is_fooled(task: HasKind, target: Any, prediction: dict[str, Any]) -> bool | None:
    """Shorthand for `decide(task, target, prediction).fooled` (tests, scripts): the seam decides, this only reads
    its answer. The apps call `decide` itself (tests/site/test_rule_homes.py)."""
    return decide(task, target, prediction).fooled


def kind_choices() -> list[tuple[str, str]]:
    return [(kind.name, gettext_lazy(kind.label)) for kind in KINDS.values()]  # (gettext_noop in each kind)


__all__ = ["KINDS", "HasKind", "InputError", "TaskConfig", "TaskKind", "Verdict", "decide", "get_kind", "is_fooled",
           "kind_choices"]
