"""An example's fingerprint: the SHA-256 of the normalised input the model reads (`Example.model_key`).

Kept apart from `annotation.duplicates` (which queries examples) so that the model can fill its own key on save
without an import cycle. What "the same example" means is explained in `annotation.duplicates`.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks.models import Task

Key = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


def normalise(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(" " if unicodedata.category(ch).startswith(("P", "Z", "C")) else ch for ch in folded)
    return " ".join(kept.split())


def key_of(inputs: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((name, normalise(str(value))) for name, value in inputs.items()))


def model_key(read: list[str], context: dict[str, Any] | None, inputs: dict[str, Any]) -> Key:
    """What the model reads, normalised: the input fields, and the context fields in `read` (by their text)."""
    context = context if isinstance(context, dict) else {}
    return key_of(inputs), key_of({name: context.get(name, "") for name in read})


def fingerprint(task: Task, context: dict[str, Any] | None, inputs: dict[str, Any]) -> str:
    """The stored form of an example's model key (`Example.model_key`): SHA-256 hex of the normalised key."""
    read = task.kind_impl.model_context_fields(task.typed_config)
    key = model_key(read, context, inputs if isinstance(inputs, dict) else {})
    return hashlib.sha256(json.dumps(key, ensure_ascii=False).encode()).hexdigest()
