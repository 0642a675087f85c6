"""CSV cells that a spreadsheet would run as a formula are neutralised (OWASP "CSV injection").

A cell written by a person (an annotator's text, a worker id) that starts with `=`, `+`, `-`, `@`, a tab or
a carriage return is prefixed with a single quote, which spreadsheets show as text and never evaluate.
Plain numbers ("-0.5", "+3") are left alone: they are data, not formulas. The JSONL and Parquet files keep
every value exactly as written; only CSV, the format people open in a spreadsheet, is changed.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def neutralise(value: Any) -> Any:
    """`value`, with a leading ' when it is text a spreadsheet would take for a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not NUMBER.fullmatch(value):
        return "'" + value
    return value


def rows_text(rows: Iterable[Iterable[Any]]) -> str:
    """RFC 4180 CSV text of `rows` (CRLF line ends), every cell neutralised. CRLF also makes the writer quote a
    cell holding a lone carriage return; with "\\n" line ends Python's csv leaves it bare and splits the row."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows([neutralise(cell) for cell in row] for row in rows)
    return buffer.getvalue()
