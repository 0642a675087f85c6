"""Near-duplicates of a writer's own recent examples: the same text, once normalised, on the same context.

Normalised: Unicode NFKC, case folded, punctuation dropped, runs of white space made one space. So
"Great food!!" and "great   food" are the same example; "great food, slow service" is not. The label
does not matter: the same text under another label is still the same example (and writing both labels
would be a sure way to "fool" the model once).
"""

from __future__ import annotations

import unicodedata

from annotation.models import Example
from dynabench_site.errors import Conflict

RECENT = 500  # the writer's latest examples on the context that are compared


class DuplicateExample(Conflict):
    code = "duplicate"

    def __init__(self, first: Example):
        super().__init__(
            f"You already wrote this example for this context (example #{first.pk}). Change the text, "
            "or ask for a new context.",
            extra={"duplicate_of": first.pk},
        )


def normalise(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(" " if unicodedata.category(ch).startswith(("P", "Z", "C")) else ch for ch in folded)
    return " ".join(kept.split())


def key_of(inputs: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((name, normalise(str(value))) for name, value in inputs.items()))


def find_duplicate(user, round_task_id: int, context_id: int | None, inputs: dict[str, str]) -> Example | None:
    """The writer's own recent example (not retracted) on the same context with the same normalised input."""
    recent = (
        Example.objects.filter(author=user, round__task_id=round_task_id, context_id=context_id, retracted=False)
        .order_by("-id")
        .values_list("pk", "input")[:RECENT]
    )
    wanted = key_of(inputs)
    first = next((pk for pk, old in recent if isinstance(old, dict) and key_of(old) == wanted), None)
    return Example.objects.get(pk=first) if first is not None else None


def check_not_duplicate(user, task_id: int, context_id: int | None, inputs: dict[str, str]) -> None:
    first = find_duplicate(user, task_id, context_id, inputs)
    if first is not None:
        raise DuplicateExample(first)
