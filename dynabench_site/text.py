"""The one rule for text that people write and the site stores (examples, reasons, names, guidelines, quizzes).

Why: a lone surrogate cannot be encoded as UTF-8, so a stored one broke every page and API answer that showed
it (500 for everyone until the example was retracted); text made only of zero-width or format characters
looks blank to validators; bidirectional controls can make a text read differently from what it says; a
stack of hundreds of combining marks ("Zalgo") spills over the page. Refused, with a message that names
the field and the position and never quotes the text itself:

* surrogates (U+D800–DFFF), noncharacters (U+FDD0–FDEF and U+xFFFE/U+xFFFF on every plane), control
  characters (C0 and C1) other than tab, line feed and carriage return;
* the explicit bidirectional controls: embeddings, overrides and isolates (U+202A–202E, U+2066–2069), the
  characters of "Trojan Source" (CVE-2021-42574) that make a text display in another order than it reads.
  Refused rather than removed: removing them would store something other than what the writer sent (and
  shift the character offsets of QA answers), and right-to-left letters need no controls to display (the
  Unicode bidi algorithm orders them by itself). The implicit marks LRM, RLM and ALM (U+200E, U+200F,
  U+061C) are accepted: they cannot reverse a run of text, only settle the direction of a neighbouring
  space or punctuation mark; right-to-left keyboards type them and real corpora hold them (up to one ANLI
  premise in a hundred, from Wikipedia). A text of nothing but marks still has no visible character;
* more than MAX_MARKS combining marks in a row on one character;
* a text with no visible character (only whitespace, zero-width and format characters, combining marks,
  variation selectors, fillers).

Everything here is regular expressions built once from `unicodedata`, so checking a long text costs no
Python loop per character. `repair` is the data check's counterpart (`manage.py check_text --fix`): it
replaces what it can (surrogates and noncharacters with U+FFFD; controls and bidi controls removed;
mark stacks cut to MAX_MARKS). This module imports no app: every layer may use it.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from dynabench_site.errors import InvalidInput

MAX_MARKS = 8  # combining marks in a row on one base character (Vietnamese, Indic, Hebrew points use 1–4)
QUOTE_CHARS = 80  # messages quote at most this many characters of what was sent
REPLACEMENT = "\ufffd"

ALLOWED_CONTROLS = "\t\n\r"
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # refused
BIDI_MARKS = "\u061c\u200e\u200f"  # accepted (invisible: they do not count as a visible character)
# Letters and symbols that render as nothing (they count as invisible, not as a visible character).
BLANK_LOOKING = "\u115f\u1160\u3164\uffa0\u2800"
# Marks, format characters and spaces are only in planes 0, 1 and 14 (the others hold ideographs, private
# use or nothing yet), so only those are scanned; the noncharacters of every plane are listed by rule.
SCANNED = [*range(0x20000), *range(0xE0000, 0xF0000)]
SURROGATE = re.compile(r"[\ud800-\udfff]")  # needs no table: pages and messages use it without building one


def _char_class(chars: list[int]) -> str:
    """A regex character class matching exactly the code points `chars` (sorted), as compact ranges."""
    parts, start, prev = [], None, None
    for cp in chars:
        if start is None:
            start = prev = cp
        elif cp == prev + 1:
            prev = cp
        else:
            parts.append((start, prev))
            start = prev = cp
    if start is not None:
        parts.append((start, prev))
    body = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in parts)
    return f"[{body}]"


def _fast_class(chars: list[int]) -> str:
    """A regex matching one of `chars`, fast on long texts: `re` keeps a bitmap for a class of BMP characters
    only, so astral ones get their own class, tried only on astral characters."""
    bmp, astral = [cp for cp in chars if cp <= 0xFFFF], [cp for cp in chars if cp > 0xFFFF]
    if not astral:
        return _char_class(bmp)
    return f"(?:{_char_class(bmp)}|(?=[\\U00010000-\\U0010ffff]){_char_class(astral)})"


def _is_noncharacter(cp: int) -> bool:
    return 0xFDD0 <= cp <= 0xFDEF or (cp & 0xFFFE) == 0xFFFE


class _Patterns:
    """The compiled classes, built from the Unicode database once, on first use."""

    def __init__(self) -> None:
        marks, invisible = [], []
        for cp in SCANNED:
            ch = chr(cp)
            category = unicodedata.category(ch)
            if category[0] == "M":
                marks.append(cp)
                invisible.append(cp)
            elif category[0] == "Z" or category in ("Cc", "Cf", "Cs") or _is_noncharacter(cp) or ch.isspace() \
                    or ch in BLANK_LOOKING:
                invisible.append(cp)
        controls = [cp for cp in range(0x100) if unicodedata.category(chr(cp)) == "Cc" and chr(cp) not in ALLOWED_CONTROLS]
        nonchars = [*range(0xFDD0, 0xFDF0), *(plane * 0x10000 + low for plane in range(17) for low in (0xFFFE, 0xFFFF))]
        self.surrogate = SURROGATE
        self.noncharacter = re.compile(_fast_class(sorted(nonchars)))
        self.control = re.compile(_char_class(controls))
        self.bidi = re.compile(f"[{BIDI_CONTROLS}]")
        self.stack = re.compile(f"{_fast_class(marks)}{{{MAX_MARKS + 1},}}")
        self.invisible_only = re.compile(f"{_fast_class(invisible)}*")


@cache
def patterns() -> _Patterns:
    return _Patterns()


def _code(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def _name(ch: str) -> str:
    return unicodedata.name(ch, "").lower()


def text_problem(value: str) -> str | None:
    """What is wrong with `value` under the text rule, in words (never quoting it); None when it is fine.

    Positions are 0-based character offsets into `value`, e.g. "contains an unpaired surrogate (U+D800) at
    position 5".
    """
    p = patterns()
    if m := p.surrogate.search(value):
        return f"contains an unpaired surrogate ({_code(m.group())}) at position {m.start()}"
    if m := p.noncharacter.search(value):
        return f"contains the noncharacter {_code(m.group())} at position {m.start()}"
    if m := p.control.search(value):
        return f"contains the control character {_code(m.group())} at position {m.start()}"
    if m := p.bidi.search(value):
        return (f"contains the bidirectional control {_code(m.group())} ({_name(m.group())}) at position "
                f"{m.start()}; bidirectional controls are not accepted")
    if m := p.stack.search(value):
        base = max(m.start() - 1, 0)
        return f"stacks {len(m.group())} combining marks on the character at position {base}; at most {MAX_MARKS} are accepted"
    if p.invisible_only.fullmatch(value):
        return "has no visible character (only spaces, invisible or combining characters)"
    return None


def check_text(value: Any, field: str) -> str:
    """`value` unchanged when it is a text that passes the rule; InvalidInput (HTTP 400) naming `field` otherwise."""
    if not isinstance(value, str):
        raise InvalidInput("must be a string", field=field)
    problem = text_problem(value)
    if problem is not None:
        raise InvalidInput(problem, field=field)
    return value


def check_optional_text(value: Any, field: str) -> str:
    """Like check_text, but an empty or blank text passes (as ""): for fields that may be left empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    return check_text(value, field)


def json_text_problem(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first text (key or value, at any depth) of a JSON value that breaks the rule: (its path, the problem).
    Empty strings pass (a blank value is the schema's business, not the rule's)."""
    if isinstance(value, str):
        problem = text_problem(value) if value else None
        return (path, problem) if problem else None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        return None
    for key, inner in items:
        where = f"{path}.{key}" if path else str(key)
        if isinstance(key, str) and key and (problem := text_problem(key)):
            return where, f"(a key) {problem}"
        if (found := json_text_problem(inner, where)) is not None:
            return found
    return None


def check_json_texts(value: Any, field: str) -> Any:
    """`value` unchanged when every text in it passes the rule; InvalidInput naming `field.path` otherwise."""
    found = json_text_problem(value, field)
    if found is not None:
        raise InvalidInput(found[1], field=found[0])
    return value


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """A value as a message may show it: repr-quoted, cut to `limit` characters with an ellipsis, and with
    surrogates escaped (so the message itself can always be encoded)."""
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# --- repair (the data check's --fix) -------------------------------------------------------------------


def repair(value: str) -> str:
    """`value` with what can be fixed fixed: surrogates and noncharacters become U+FFFD, control and
    bidirectional characters are removed, stacks of combining marks are cut to MAX_MARKS. A text with no
    visible character stays as it is (nothing can be made up for it)."""
    p = patterns()
    value = p.surrogate.sub(REPLACEMENT, value)
    value = p.noncharacter.sub(REPLACEMENT, value)
    value = p.control.sub("", value)
    value = p.bidi.sub("", value)
    return p.stack.sub(lambda m: m.group()[:MAX_MARKS], value)


def repair_json(value: Any) -> Any:
    """A JSON value with every text (keys too) repaired."""
    if isinstance(value, str):
        return repair(value)
    if isinstance(value, dict):
        return {repair(k) if isinstance(k, str) else k: repair_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [repair_json(v) for v in value]
    return value


def without_surrogates(text: str) -> str:
    """`text` with every surrogate replaced by U+FFFD: what pages send out (UTF-8 cannot carry one)."""
    return SURROGATE.sub(REPLACEMENT, text) if SURROGATE.search(text) else text


# --- form and serializer validators --------------------------------------------------------------------


def validate_text(value: str) -> None:
    """A Django validator (model and form fields): ValidationError with the rule's message.
    Django runs no validator on an empty value, so an optional field may still be left empty."""
    problem = text_problem(value)
    if problem is not None:
        raise DjangoValidationError(problem, code="text_rule")


def drf_validate_text(value: str) -> None:
    """The same for DRF serializer fields (DRF answers 400 naming the field)."""
    problem = text_problem(value)
    if problem is not None:
        raise serializers.ValidationError(problem, code="text_rule")


class RuleCharField(serializers.CharField):
    """A DRF CharField that applies the text rule to what it accepts (a blank value, when allowed, passes)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators.append(drf_validate_text)


def add_text_rule(*fields: Any) -> None:
    """Add the rule to form fields (Django or DRF) that already exist, e.g. those a form builds in __init__."""
    for field in fields:
        validator = drf_validate_text if isinstance(field, serializers.Field) else validate_text
        if validator not in field.validators:
            field.validators.append(validator)
