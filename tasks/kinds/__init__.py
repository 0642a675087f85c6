"""Registry of task kinds. Adding a kind is adding one module and one line here."""

from __future__ import annotations

from tasks.kinds.base import InputError, TaskConfig, TaskKind
from tasks.kinds.classification import ClassificationKind
from tasks.kinds.hate_speech import HateSpeechKind
from tasks.kinds.nli import NLIKind
from tasks.kinds.qa import QAKind
from tasks.kinds.sentiment import SentimentKind

KINDS: dict[str, TaskKind] = {
    kind.name: kind for kind in (SentimentKind(), NLIKind(), HateSpeechKind(), QAKind(), ClassificationKind())
}


def get_kind(name: str) -> TaskKind:
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown task kind {name!r}; known kinds: {', '.join(KINDS)}") from None


def kind_choices() -> list[tuple[str, str]]:
    return [(kind.name, kind.label) for kind in KINDS.values()]


__all__ = ["KINDS", "InputError", "TaskConfig", "TaskKind", "get_kind", "kind_choices"]
