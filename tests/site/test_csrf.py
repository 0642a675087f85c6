"""CSRF: every form POST and every session-authenticated API call needs the CSRF token; with it, the same request
goes through. Token-authenticated API calls need none by design (a browser never sends an Authorization header
by itself), and neither does POST /api/auth/token/ (it authenticates with the password in its body, no session).

The requests are the permission matrix's rows (tests/site/test_permission_matrix.py), each sent by a persona
the matrix allows, with Django's test client enforcing CSRF as a browser's requests are checked."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client
from django.utils.crypto import get_random_string

from accounts import tokens
from tests.site.test_permission_matrix import ALLOWED, OK, PERSONAS, ROWS, Row, outcome, run_as

# Exempt by design: it takes a username and password, sets no session, and answers only a new token. The crowd
# platform's webhook has no session either: the platform signs each request (crowd.platform.verify).
EXEMPT = {"api/auth/token/", "crowd/webhooks/<int:pk>/"}
UNSAFE = [row for row in ROWS if row.method not in ("GET", "HEAD", "OPTIONS") and row.route not in EXEMPT]


def allowed_persona(row: Row) -> str:
    """A persona the matrix lets through (signed in when one is; else anonymous; for rows nobody here may use,
    such as another worker's assignment, any signed-in persona: CSRF is checked before anything else)."""
    for wanted in (OK, ALLOWED):
        signed_in = [p for p in PERSONAS if p != "anonymous" and row.expected[p] == wanted]
        if signed_in or row.expected["anonymous"] == wanted:
            return (signed_in or ["anonymous"])[0]
    return "outsider"


def csrf_client(secret: str | None) -> Client:
    client = Client(enforce_csrf_checks=True)
    if secret:
        client.cookies[settings.CSRF_COOKIE_NAME] = secret
    return client


class WithToken(Client):
    """A CSRF-enforcing client that sends the token as a browser page would: the form field, or the
    X-CSRFToken header for JSON (what frontend/static/js/api.js does)."""

    def __init__(self, secret: str):
        super().__init__(enforce_csrf_checks=True, HTTP_X_CSRFTOKEN=secret)
        self.cookies[settings.CSRF_COOKIE_NAME] = secret
        self.secret = secret

    def post(self, path, data=None, content_type=None, **extra):
        if isinstance(data, dict) and content_type is None:
            data = {**data, "csrfmiddlewaretoken": self.secret}
        return super().post(path, data, content_type=content_type, **extra) if content_type else \
            super().post(path, data, **extra)


@pytest.mark.parametrize("row", UNSAFE, ids=lambda r: r.id)
def test_an_unsafe_request_without_its_csrf_token_is_refused(row, world):
    persona = allowed_persona(row)
    refused = run_as(row, world, persona, csrf_client(None))
    assert refused.status_code == 403, (persona, refused.status_code)
    assert b"CSRF" in refused.content
    secret = get_random_string(32)
    wrong = run_as(row, world, persona, csrf_client(secret))  # a cookie, but no token sent back
    assert wrong.status_code == 403 and b"CSRF" in wrong.content


@pytest.mark.parametrize("row", UNSAFE, ids=lambda r: r.id)
def test_the_same_request_with_its_csrf_token_goes_through(row, world):
    persona = allowed_persona(row)
    response = run_as(row, world, persona, WithToken(get_random_string(32)))
    expected = row.expected[persona]
    assert b"CSRF" not in response.content[:2000], (persona, response.status_code)
    assert outcome(response) == expected or (expected == ALLOWED and response.status_code not in (401, 403, 404)), \
        (persona, response.status_code, response.content[:300])


def test_token_authenticated_api_calls_need_no_csrf_token(world):
    _, key = tokens.issue(world.people["annotator"], "script", counted=False)
    client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Token {key}")
    response = client.post(f"/api/examples/{world.example.pk}/flag/", {"reason": "typo"}, content_type="application/json")
    assert response.status_code == 200


def test_the_token_endpoint_takes_a_password_without_a_csrf_token(world):
    from tests.factories import PASSWORD

    client = Client(enforce_csrf_checks=True)
    response = client.post("/api/auth/token/", {"username": "annotator", "password": PASSWORD},
                           content_type="application/json")
    assert response.status_code == 200 and response.json()["key"].startswith("dyn_")
