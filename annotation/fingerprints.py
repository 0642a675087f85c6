"""An example's fingerprint: the SHA-256 of the normalised input the model reads (`Example.model_key`).

Kept apart from `annotation.duplicates` (which queries examples) so that the model can fill its own key on save
without an import cycle. What "the same example" means is explained in `annotation.duplicates`.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks.models import Task

Key = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


# The Hangul fillers: default-ignorable letters (Lo), which render as nothing. Every other default-ignorable code
# point (Unicode's Default_Ignorable_Code_Point: soft hyphen, zero-width space and joiners, word joiner, direction
# marks, variation selectors, tags) is a format character (Cf), a nonspacing mark (Mn) or unassigned (Cn), which
# `_read` drops by category.
IGNORABLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
DROPPED = frozenset("\ufffd")  # the replacement character: the tokenizer drops it too
WHITESPACE_CONTROLS = frozenset("\t\n\r")


@lru_cache(maxsize=4096)
def _read(ch: str) -> str:
    """One character (of the decomposed, case-folded text) as the encoder's tokenizer reads it: "" when it reads
    nothing (format and control characters, nonspacing marks, default-ignorable code points), " " for a separator
    (white space, and punctuation, which the duplicate rule ignores), else the character itself."""
    category = unicodedata.category(ch)
    if ch in WHITESPACE_CONTROLS or category[0] in "PZ":
        return " "
    if category == "Mn" or category[0] == "C" or ch in IGNORABLE_LETTERS or ch in DROPPED:
        return ""
    return ch


def normalise(text: str) -> str:
    """The text as the model reads it, for comparing: compatibility forms unified (NFKC: full width, ligatures),
    case folded, invisible characters dropped (format characters such as U+200B zero-width space, U+2060 word
    joiner, U+200E left-to-right mark, variation selectors such as U+FE0F, every default-ignorable code point),
    accents dropped whether precomposed or written as combining marks (the packaged encoder's uncased tokenizer
    strips them: it reads "café" and "cafe\u0301" and "cafe" alike), punctuation dropped, runs of white space made
    one space; then composed again (NFC). `tests/annotation/test_duplicates.py` checks it against the real
    tokenizer."""
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    read = "".join(_read(ch) for ch in decomposed)
    return unicodedata.normalize("NFC", " ".join(read.split()))


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
