"""The bounded JSON decoder (dynabench_site.parsers): the same values as json.loads under the nesting limit,
a ValueError for everything else, and a body built to make the old check quadratic answered at once (issue 25).

Property-based (hypothesis): any JSON value is decoded as json.loads decodes it, deeper ones are refused with
the depth, and arbitrary text or bytes never raise anything but ValueError. Times are not asserted here; the
linear cost is measured by bench/bench_parser.py.
"""

from __future__ import annotations

import json
import math
from itertools import accumulate
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynabench_site.parsers import MAX_DEPTH, brackets_of, deepest, loads_bounded, nesting_depth, shallow_bound

SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text())
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                           max_leaves=30)
DUMPS = st.sampled_from([
    lambda v: json.dumps(v),
    lambda v: json.dumps(v, ensure_ascii=False),
    lambda v: json.dumps(v, indent=2),
    lambda v: json.dumps(v, separators=(",", ":")),
])
JSONISH = st.text(alphabet='[]{}",:\\/ \n\t0123456789.eE+-truefalsnNaIiy\u00e9\U0001f600', max_size=200)
PROPERTIES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def depth_of(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    return 0


def wrapped(value: Any, levels: list[bool]) -> Any:
    """`value` inside one array (False) or object (True) per entry of `levels`."""
    for as_object in levels:
        value = {"k": value} if as_object else [value]
    return value


def refuse(name: str) -> Any:
    raise ValueError(name)


def outcome(decode, text: str | bytes) -> Any:
    try:
        return ("value", decode(text))
    except ValueError:
        return ("refused", None)


@PROPERTIES
@given(JSON_VALUES, DUMPS)
def test_any_json_value_under_the_limit_decodes_as_json_loads_does(value, dump):
    text = dump(value)
    assert depth_of(value) <= MAX_DEPTH
    assert loads_bounded(text) == json.loads(text)
    assert loads_bounded(text.encode()) == json.loads(text)
    assert nesting_depth(text) == depth_of(value)  # brackets inside strings never count


@PROPERTIES
@given(JSON_VALUES, st.lists(st.booleans(), min_size=MAX_DEPTH + 1, max_size=MAX_DEPTH + 60), DUMPS)
def test_a_json_value_deeper_than_the_limit_is_refused_with_its_depth(value, levels, dump):
    deep = wrapped(value, levels)
    with pytest.raises(ValueError, match=f"nests {depth_of(deep)} levels deep; at most {MAX_DEPTH} are accepted"):
        loads_bounded(dump(deep))


@PROPERTIES
@given(JSON_VALUES, st.lists(st.booleans(), max_size=MAX_DEPTH))
def test_the_limit_is_exact(value, levels):
    value = wrapped(value, levels)
    text = json.dumps(value)
    if depth_of(value) <= MAX_DEPTH:
        assert loads_bounded(text) == json.loads(text)
    else:
        with pytest.raises(ValueError, match="levels deep"):
            loads_bounded(text)


@PROPERTIES
@given(st.one_of(JSONISH, st.text(max_size=200)))
def test_any_text_is_decoded_as_json_loads_does_or_refused_with_a_value_error(text):
    got = outcome(loads_bounded, text)  # anything but a ValueError fails the test
    if nesting_depth(text) <= MAX_DEPTH:
        expected = outcome(lambda t: json.loads(t, parse_constant=refuse), text)
        assert got == expected or (got[0] == expected[0] == "value" and _same_nan(got[1], expected[1]))
    else:
        assert got == ("refused", None)


@PROPERTIES
@given(st.binary(max_size=300))
def test_any_bytes_are_decoded_or_refused_with_a_value_error(raw):
    outcome(loads_bounded, raw)


@PROPERTIES
@given(st.text(alphabet="[]{}", max_size=300))
def test_the_fast_depth_bound_never_says_less_than_the_depth(text):
    brackets = brackets_of(text)
    bound = shallow_bound(brackets)
    if bound is not None:
        assert bound >= deepest(brackets)
        if balanced(brackets):
            assert bound == deepest(brackets)


def balanced(brackets: str) -> bool:
    sums = list(accumulate(1 if c == "[" else -1 for c in brackets))
    return min(sums, default=0) >= 0 and sum(1 if c == "[" else -1 for c in brackets) == 0


def _same_nan(a: Any, b: Any) -> bool:
    return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)


@pytest.mark.parametrize("body, message", [
    ("[NaN]", "NaN is not valid JSON"),
    ('{"a": -Infinity}', "-Infinity is not valid JSON"),
    ("[" * 5000 + "]" * 5000, "nests 5000 levels deep"),
    ("[" * 100_000, "nests 100000 levels deep"),  # unterminated: refused before the decoder recurses
    ('["' + "[" * 5000 + '"]', None),  # brackets inside a string do not count
])
def test_examples(body, message):
    if message is None:
        assert loads_bounded(body) == ["[" * 5000]
    else:
        with pytest.raises(ValueError, match=message):
            loads_bounded(body)


def test_text_that_is_not_utf8_is_a_value_error():
    with pytest.raises(UnicodeDecodeError):
        loads_bounded(b'{"a": "\xff"}')
    assert issubclass(UnicodeDecodeError, ValueError)


def adversarial(size: int) -> bytes:
    """An unterminated string of escaped quotes: `"` then `\\"` repeated (the old check's quadratic case)."""
    return b'"' + b'\\"' * ((size - 1) // 2)


def test_the_adversarial_body_leaves_no_bracket_to_count():
    """One pass: the unterminated string runs to the end of the text and nothing is scanned twice."""
    assert brackets_of(adversarial(1 << 20).decode()) == ""
    assert brackets_of('["' + '\\"' * 1000 + '"], [[' + '"\\\\"' + "]]") == "[][[]]"
    with pytest.raises(ValueError, match="Unterminated string"):
        loads_bounded(adversarial(1 << 20))


@pytest.fixture
def world(db, personas, open_round):
    return personas


def test_the_adversarial_body_is_a_400_on_the_token_route(client_for, world):
    body = adversarial(16_000)  # under the route's 16 KB cap: it is decoded, and refused as JSON
    response = client_for("anonymous").post("/api/auth/token/", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("JSON parse error: Unterminated string")


def test_a_megabyte_adversarial_body_is_a_413_on_the_token_route_and_a_400_on_a_json_route(client_for, world):
    body = adversarial(1 << 20)
    token = client_for("anonymous").post("/api/auth/token/", body, content_type="application/json")
    assert token.status_code == 413 and "the limit is 16384 bytes" in token.json()["detail"]
    examples = client_for("annotator").post("/api/tasks/sentiment/examples/", body, content_type="application/json")
    assert examples.status_code == 400
    assert examples.json()["detail"].startswith("JSON parse error: Unterminated string")


def test_a_body_that_is_not_utf8_says_so(client_for, world):
    response = client_for("anonymous").post("/api/auth/token/", b'{"username": "\xff"}', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"] == "JSON parse error: the body is not UTF-8 text (byte 14 is not valid UTF-8)."
