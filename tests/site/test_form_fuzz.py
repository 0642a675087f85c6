"""Fuzz every form POST of the site's pages: whatever a form sends, the answer is never a 5xx.

scripts/schemathesis.sh fuzzes the API over its OpenAPI schema; the pages' forms are not in that schema (and
schemathesis speaks OpenAPI and GraphQL only), so this is the pages' twin, with hypothesis. The routes are the
permission matrix's POST rows that are not API calls (tests/site/test_permission_matrix.py: one row per route, so a
new form is fuzzed as soon as it gets its row). The field names of each form come from the pages themselves: every
GET row is opened as the owner, the annotator and the admin, and each `<form method="post">` found (html.parser)
gives its action's route and its inputs; the row's own valid body adds its fields (a form a page builds in script,
or one only some states show). Each request is sent signed in as the owner or the annotator (or the site admin, for
a form the owner may not send), with the valid body or none as a base, some fields replaced by hypothesis' values
(odd unicode, NUL, huge and negative numbers, empty, JSON-looking text, repeated keys) and some left out; in a
savepoint rolled back afterwards, so every example finds the same world.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.db import transaction
from django.test import Client
from django.urls import Resolver404, resolve
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.site.test_permission_matrix import OK, ROWS, Row, World

FORM_ROWS = [row for row in ROWS if row.method == "POST" and not row.json and not row.route.startswith("api/")]
FUZZERS = ("owner", "annotator")
SKIPPED_INPUTS = {"csrfmiddlewaretoken"}
EXAMPLES = 10  # per route: about 40 routes, well under a minute in all


def fuzzers(row: Row) -> tuple[str, ...]:
    """The owner and the annotator; and the site admin where the owner is refused (a new task), so that every
    form is fuzzed past its permission check by someone."""
    return FUZZERS if row.expected["owner"] == OK else (*FUZZERS, "admin")


class FormInputs(HTMLParser):
    """The POST forms of one page: [(action, {input names})]."""

    def __init__(self, page: str):
        super().__init__()
        self.page, self.forms, self.current = page, [], None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        if tag == "form" and (attrs.get("method") or "get").lower() == "post":
            self.current = (attrs.get("action") or self.page, set())
            self.forms.append(self.current)
        elif tag in ("input", "select", "textarea", "button") and self.current and attrs.get("name"):
            self.current[1].add(attrs["name"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.current = None


def route_of(action: str) -> str | None:
    try:
        return resolve(urlsplit(action).path).route
    except Resolver404:
        return None


_CRAWLED: dict[str, set[str]] = {}


def form_fields(world: World) -> dict[str, set[str]]:
    """{route: the input names its forms send}, from every page the owner, the annotator or the admin can open
    (once per session: the routes and their forms' names do not depend on the world's ids)."""
    if _CRAWLED:
        return _CRAWLED
    for persona in (*FUZZERS, "admin"):
        client = Client()
        client.force_login(world.people[persona])
        for row in ROWS:
            if row.method != "GET":
                continue
            path = row.path(world, world.people[persona])
            response = client.get(path)
            if "html" not in response.get("Content-Type", ""):
                continue
            parser = FormInputs(path)
            parser.feed(response.content.decode(errors="replace"))
            for action, names in parser.forms:
                if route := route_of(action):
                    _CRAWLED.setdefault(route, set()).update(names - SKIPPED_INPUTS)
    return _CRAWLED


ODD_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
NUMBERS = st.one_of(st.integers(-(10**40), 10**40).map(str), st.floats().map(repr),
                    st.sampled_from(["-1", "0", "2147483648", "9" * 400, "1e309", "NaN", "-Infinity", "²", "١٢",
                                     "0x1F", " 7 ", "3.5", "-0"]))
SHAPES = st.sampled_from(["", " ", "\x00", "{}", "[]", "null", '{"a": {"b": [1, {"c": null}]}}', "[" * 60 + "]" * 60,
                          '{"__proto__": {"admin": true}}', "on", "true", "correct", "positive", "annotator", "owner",
                          "researchers", "//evil.example/", "/../../etc/passwd", "?next=//evil", "a" * 20_000,
                          "<script>alert(1)</script>", "' OR 1=1 --", "W1,A1,,,", "\r\n\t"])
VALUE = st.one_of(ODD_TEXT, NUMBERS, SHAPES)
FIELD = st.one_of(VALUE, st.lists(VALUE, min_size=2, max_size=3))  # a list: the key sent several times


def body_for(data: st.DataObject, row: Row, world: World, user, fields: set[str]) -> dict:
    """The valid body or nothing, some fields replaced by fuzzed values, some removed."""
    valid = row.data(world, user) if row.data else {}
    base = dict(valid) if data.draw(st.booleans(), label="start from the valid body") else {}
    names = sorted(fields | set(valid) | {"next"})
    changes = data.draw(st.fixed_dictionaries({}, optional={name: FIELD for name in names}), label="fuzzed fields")
    dropped = data.draw(st.sets(st.sampled_from(names)), label="left out") if names else set()
    return {k: v for k, v in {**base, **changes}.items() if k not in dropped or k in changes}


@pytest.fixture
def fuzz_world(world, settings):
    settings.LOGIN_ACCOUNT_RATE = "10000/min"  # wrong passwords by the hundred: not what this test is about
    return world


@pytest.mark.parametrize("row", FORM_ROWS, ids=lambda r: r.id)
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_no_form_post_answers_5xx(row: Row, fuzz_world: World, data: st.DataObject):
    world = fuzz_world
    persona = data.draw(st.sampled_from(fuzzers(row)), label="signed in as")
    user = world.people[persona]
    body = body_for(data, row, world, user, form_fields(world).get(row.route, set()))
    with transaction.atomic():
        client = Client(raise_request_exception=False)
        client.force_login(user)
        response = client.post(row.path(world, user), body)
        transaction.set_rollback(True)
    assert response.status_code < 500, f"{row.id} as {persona}: {response.status_code} for {body!r}"


def test_every_form_route_is_fuzzed_with_the_fields_its_pages_send(world):
    """The crawl finds the forms: a page's form whose fields this test could not see would be fuzzed blind."""
    fields = form_fields(world)
    assert {"name", "instructions", "config"} <= fields["tasks/<slug:slug>/console/settings/"]
    assert {"username", "role"} <= fields["tasks/<slug:slug>/console/crowd/members/"]
    assert {"name", "access"} <= fields["me/tokens/"]
    assert {"slug", "kind", "visibility"} <= fields["console/tasks/new/"]  # the admin's page
    assert len(FORM_ROWS) >= 30 and all(not row.route.startswith("api/") for row in FORM_ROWS)
