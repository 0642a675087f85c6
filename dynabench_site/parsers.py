"""JSON request bodies with a nesting limit.

Python's JSON decoder recurses once per level: a body of a few thousand `[` raises RecursionError, which
is not a ValueError, so DRF's parser let it through as a 500. No request of this API needs more than a
few levels (an example's input and target are flat objects); anything deeper is refused with a 400 that
says so, before the decoder sees it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 20


STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
BRACKETS = re.compile(r"[\[\]{}]")


class BodyTooLarge(APIException):
    status_code = 413
    default_code = "too_large"


def nesting_depth(text: str) -> int:
    """How deeply objects and arrays nest in a JSON text (brackets inside strings do not count)."""
    depth = deepest = 0
    for match in BRACKETS.finditer(STRINGS.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def loads_bounded(raw: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """Decode JSON, refusing (ValueError) a document nested deeper than `max_depth` before decoding it."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    depth = nesting_depth(text)
    if depth > max_depth:
        raise ValueError(f"the JSON body nests {depth} levels deep; at most {max_depth} are accepted")
    return json.loads(text, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser with a size and a nesting limit; every refusal is a 4xx with the reason."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        cap = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        # Never more than the cap into memory: DRF reads the stream, not request.body, so Django's own check
        # (DATA_UPLOAD_MAX_MEMORY_SIZE) never runs for JSON bodies.
        raw = stream.read(-1 if cap is None else cap + 1) if stream is not None else b""
        if cap is not None and len(raw) > cap:
            raise BodyTooLarge(f"The request body is too large (the limit is {cap} bytes).")
        try:
            return loads_bounded(raw, MAX_DEPTH)
        except UnicodeDecodeError:
            raise ParseError("JSON parse error: the body is not UTF-8 text.") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error: {exc}") from None
