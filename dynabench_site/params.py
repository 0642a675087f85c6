"""Numbers in query strings and forms, read strictly.

`str.isdigit()` is not a test for "an integer": it accepts superscripts ("²", which int() refuses: a 500)
and other scripts' digits; and a 30-digit id overflows the database's integer columns. Every number a
request carries is read here: plain ASCII digits within the range of the column it filters, or a 400
that names the parameter.
"""

from __future__ import annotations

import re

from dynabench_site.errors import InvalidInput

DIGITS = re.compile(r"[0-9]{1,10}")
INT_MAX = 2**31 - 1  # PostgreSQL integer; ids (bigint) are never larger in practice than this either


def whole_number(raw: str | None, field: str) -> int | None:
    """The non-negative integer `raw` spells; None when absent or empty; InvalidInput (400) otherwise."""
    if raw is None or raw == "":
        return None
    if not DIGITS.fullmatch(raw) or int(raw) > INT_MAX:
        raise InvalidInput(f"must be a whole number between 0 and {INT_MAX}, not {raw[:20]!r}", field=field)
    return int(raw)


def whole_numbers(values: list[str]) -> list[int]:
    """The values that are whole numbers (form checkboxes of ids); others are left out."""
    return [int(v) for v in values if DIGITS.fullmatch(v) and int(v) <= INT_MAX]
