"""A bounded fuzz run of the JSON body parser (issue 25), with hypothesis: no crash, and json.loads's answer.

    .venv/bin/python bench/fuzz_parser.py [--seconds 60] [--batch 300]

Feeds `dynabench_site.parsers.loads_bounded` and the DRF parser (`BoundedJSONParser`, as the token route and
an examples route see it) with JSON values (any shape, wrapped up to 40 levels deep, in several layouts),
the same texts mutated (characters inserted, deleted, replaced with JSON's special ones, truncated, slices
repeated), JSON-ish text and random bytes (also bit-flipped UTF-8 of valid JSON). It fails (exit 1, with the
smallest failing input hypothesis finds) on any exception other than ValueError from loads_bounded or
ParseError/BodyTooLarge from the parser, on an answer that differs from json.loads for valid JSON within the
depth limit, and on a valid JSON text refused within the limit or accepted beyond it. Runs batches of
--batch inputs until --seconds have passed, then prints how many inputs ran. No database.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")

import django  # noqa: E402

django.setup()

from django.test import RequestFactory  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from rest_framework.exceptions import ParseError  # noqa: E402
from rest_framework.request import Request  # noqa: E402

from dynabench_site.parsers import MAX_DEPTH, BodyTooLarge, BoundedJSONParser, loads_bounded  # noqa: E402

SPECIAL = '[]{}",:\\/ \n\t0123456789.-+eEtrufalsnNIy\u00e9\u2028\U0001f600\x00\x7f'
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=20))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
                      max_leaves=40)
LAYOUTS = [
    lambda v: json.dumps(v),
    lambda v: json.dumps(v, ensure_ascii=False),
    lambda v: json.dumps(v, indent=1),
    lambda v: json.dumps(v, separators=(",", ":")),
]
ROUTES = ["/api/auth/token/", "/api/tasks/fuzz/examples/"]
COUNTS: Counter[str] = Counter()


class Mismatch(AssertionError):
    pass


def depth_of(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    return 0


@st.composite
def documents(draw) -> tuple[str, Any]:
    """A JSON text and its value, wrapped in 0 to 40 extra arrays or objects."""
    value = draw(VALUES)
    for as_object in draw(st.lists(st.booleans(), max_size=40)):
        value = {draw(st.text(max_size=3)): value} if as_object else [value]
    return draw(st.sampled_from(LAYOUTS))(value), value


@st.composite
def mutated(draw) -> str:
    text, _ = draw(documents())
    for _ in range(draw(st.integers(1, 6))):
        if not text:
            break
        at = draw(st.integers(0, len(text) - 1))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "truncate", "repeat"]))
        char = draw(st.sampled_from(SPECIAL))
        if kind == "insert":
            text = text[:at] + char + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + 1:]
        elif kind == "replace":
            text = text[:at] + char + text[at + 1:]
        elif kind == "truncate":
            text = text[:at]
        else:
            end = draw(st.integers(at, len(text)))
            text = text[:end] + text[at:end] * draw(st.integers(1, 50)) + text[end:]
    return text


@st.composite
def flipped(draw) -> bytes:
    raw = bytearray(draw(documents())[0].encode())
    for _ in range(draw(st.integers(1, 4))):
        if raw:
            at = draw(st.integers(0, len(raw) - 1))
            raw[at] ^= 1 << draw(st.integers(0, 7))
    return bytes(raw)


INPUTS = st.one_of(
    documents().map(lambda d: ("document", d[0])),
    mutated().map(lambda t: ("mutated", t)),
    st.text(alphabet=SPECIAL, max_size=400).map(lambda t: ("jsonish", t)),
    st.text(max_size=200).map(lambda t: ("text", t)),
    st.binary(max_size=400).map(lambda b: ("bytes", b)),
    flipped().map(lambda b: ("flipped", b)),
)


def refuse_constant(name: str) -> Any:
    raise ValueError(name)


def reference(text: str | bytes) -> tuple[str, Any]:
    """json.loads's answer: ("value", v), ("refused", None) or ("deep", None) (RecursionError)."""
    try:
        decoded = text.decode("utf-8") if isinstance(text, bytes) else text
        return "value", json.loads(decoded, parse_constant=refuse_constant)
    except RecursionError:
        return "deep", None
    except ValueError:
        return "refused", None


def ours(text: str | bytes) -> tuple[str, Any]:
    try:
        return "value", loads_bounded(text)
    except ValueError as exc:  # anything else escapes: a failure
        return ("deep" if "levels deep" in str(exc) else "refused"), None


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def check_one(kind: str, text: str | bytes) -> None:
    COUNTS[kind] += 1
    got, expected = ours(text), reference(text)
    if expected[0] == "value":
        depth = depth_of(expected[1])
        if depth <= MAX_DEPTH and (got[0] != "value" or not same(got[1], expected[1])):
            raise Mismatch(f"{kind}: json.loads decodes it (depth {depth}) but loads_bounded answered {got!r}")
        if depth > MAX_DEPTH and got[0] != "deep":
            raise Mismatch(f"{kind}: nests {depth} levels deep but loads_bounded answered {got[0]}")
    elif got[0] == "value":
        raise Mismatch(f"{kind}: json.loads refuses it ({expected[0]}) but loads_bounded decoded {got[1]!r}")
    check_parser(text)


def check_parser(text: str | bytes) -> None:
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    for route in ROUTES:
        request = Request(RequestFactory().post(route, b"", content_type="application/json"))
        with contextlib.suppress(ParseError, BodyTooLarge):  # anything else escapes: a failure
            BoundedJSONParser().parse(io.BytesIO(raw), parser_context={"request": request})


def run_batch(batch: int) -> None:
    @settings(max_examples=batch, deadline=None, database=None, derandomize=False, print_blob=True,
              suppress_health_check=list(HealthCheck))
    @given(INPUTS)
    def fuzz(case: tuple[str, str | bytes]) -> None:
        check_one(*case)

    fuzz()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--batch", type=int, default=300)
    args = parser.parse_args()
    start = time.monotonic()
    batches = 0
    try:
        while batches == 0 or time.monotonic() - start < args.seconds:
            run_batch(args.batch)
            batches += 1
    except Exception as exc:  # hypothesis re-raises the smallest failing case's exception after printing it
        print(f"fuzz_parser: FAILED after {sum(COUNTS.values())} inputs: {type(exc).__name__}: {exc}")
        sys.exit(1)
    total = sum(COUNTS.values())
    print(f"fuzz_parser: ok: {total} inputs in {time.monotonic() - start:.0f} s ({batches} batches), no crash, "
          "json.loads's answer on every valid text within the limit")
    print("  " + ", ".join(f"{kind} {n}" for kind, n in sorted(COUNTS.items())))


if __name__ == "__main__":
    main()
