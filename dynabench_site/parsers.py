"""JSON request bodies with a size and a nesting limit, checked in time linear in the body.

Python's JSON decoder recurses once per level: a body of a few thousand `[` raises RecursionError, which
is not a ValueError, so DRF's parser let it through as a 500. No request of this API needs more than a
few levels (an example's input and target are flat objects); anything deeper is refused with a 400 that
says so, before the decoder sees it.

The depth is measured without backtracking (issue 25): the former check stripped strings with
`"(?:[^"\\]|\\.)*"`, which restarts at every quote of an unterminated string and took seconds on 24 KB of
`"\\"\\"…`. Here one regular expression whose every quantifier is possessive removes strings (an
unterminated one runs to the end of the text) and everything that is not a bracket in a single left-to-right
pass; what is left, brackets only, is measured with `str.replace` passes for the usual shallow body and a
running sum otherwise. Both are linear, and the decoder then never recurses past `max_depth`.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

from dynabench_site import bodylimit

MAX_DEPTH = 20
# Strings (the closing quote optional: an unterminated string runs to the end) and runs of anything but
# brackets and quotes. Possessive quantifiers: nothing is ever matched twice, whatever the text.
NOISE = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?|[^\[\]{}"]++', re.DOTALL)
ONE_KIND = str.maketrans("{}", "[]")
STEP = {"[": 1, "]": -1}
FAST_PASSES = 4  # pairs removed this many times over cover every body of this API; deeper ones are summed


class BodyTooLarge(APIException):
    status_code = 413
    default_code = "too_large"


def brackets_of(text: str) -> str:
    """The brackets of a JSON text outside its strings, all written `[` and `]`, in order."""
    return NOISE.sub("", text).translate(ONE_KIND)


def deepest(brackets: str) -> int:
    """How many brackets are open at most at one point (a running sum: exact, about 50 ns a bracket)."""
    return max(0, max(accumulate(map(STEP.__getitem__, brackets)), default=0))


def shallow_bound(brackets: str, passes: int = FAST_PASSES) -> int | None:
    """An upper bound on the depth, exact for balanced brackets, when matched pairs nest at most `passes`
    deep (None otherwise). Each pass removes the innermost pairs at C speed; what is left unmatched is
    `]…][…[`, and every open left may hold at most `passes` more levels."""
    rest = brackets
    for used in range(passes + 1):
        if "[]" not in rest:
            return used + rest.count("[")
        if used < passes:
            rest = rest.replace("[]", "")
    return None


def nesting_depth(text: str) -> int:
    """How deeply objects and arrays nest in a JSON text (brackets inside strings do not count)."""
    return deepest(brackets_of(text))


def check_depth(text: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise ValueError when `text` nests deeper than `max_depth`; linear in the text."""
    brackets = brackets_of(text)
    bound = shallow_bound(brackets)
    if bound is not None and bound <= max_depth:
        return
    depth = deepest(brackets)
    if depth > max_depth:
        raise ValueError(f"the JSON body nests {depth} levels deep; at most {max_depth} are accepted")


def loads_bounded(raw: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """Decode JSON, refusing (ValueError) a document nested deeper than `max_depth` before decoding it.
    Every refusal is a ValueError: text that is not UTF-8 (UnicodeDecodeError), NaN and Infinity, bad JSON."""
    text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
    check_depth(text, max_depth)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:  # cannot happen below max_depth; never a 500 if it ever did
        raise ValueError("the JSON body nests too deeply") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser with the route's size cap (dynabench_site.bodylimit) and a nesting limit; every
    refusal is a 4xx with the reason."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        request = (parser_context or {}).get("request")
        cap = bodylimit.cap_for(getattr(request, "_request", request), multipart=False)
        # Never more than the cap into memory: DRF reads the stream, not request.body, so Django's own check
        # (DATA_UPLOAD_MAX_MEMORY_SIZE) never runs for JSON bodies.
        raw = stream.read(-1 if cap.limit is None else cap.limit + 1) if stream is not None else b""
        if cap.limit is not None and len(raw) > cap.limit:
            raise BodyTooLarge(cap.message(None))
        try:
            return loads_bounded(raw, MAX_DEPTH)
        except UnicodeDecodeError as exc:
            raise ParseError(f"JSON parse error: the body is not UTF-8 text (byte {exc.start} is not valid "
                             "UTF-8).") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error: {exc}") from None
