"""API tokens: they expire, their owners list, create (named) and revoke them (page and API), and a refused
token says why. Read-only tokens are the same tokens, limited to reading."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import tokens
from accounts.models import ApiToken
from exports.models import ReadOnlyToken
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def with_key(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


def obtain(api, username: str, **extra) -> dict:
    response = api.post("/api/auth/token/", {"username": username, "password": PASSWORD, **extra}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_token_from_a_password_expires_after_token_ttl_days(api, settings):
    settings.TOKEN_TTL_DAYS = 7
    UserFactory(username="scripter")
    body = obtain(api, "scripter", name="laptop")
    assert body["key"] == body["token"] and body["key"].startswith("dyn_")
    assert body["name"] == "laptop" and body["access"] == "full" and body["state"] == "active"
    token = ApiToken.objects.get(pk=body["id"])
    assert timedelta(days=6, hours=23) < token.expires_at - timezone.now() <= timedelta(days=7)
    assert token.key_hash != body["key"] and body["key"] not in str(ApiToken.objects.values())  # only a hash is kept
    assert with_key(body["key"]).get("/api/me/stats/").status_code == 200


def test_expired_token_is_refused_with_a_message(api):
    UserFactory(username="scripter")
    body = obtain(api, "scripter")
    ApiToken.objects.filter(pk=body["id"]).update(expires_at=timezone.now() - timedelta(minutes=1))
    response = with_key(body["key"]).get("/api/me/stats/")
    assert response.status_code == 401
    assert "This token expired on" in response.json()["detail"] and "create a new one" in response.json()["detail"]
    assert response["WWW-Authenticate"] == "Token"


def test_a_revoked_or_unknown_token_is_refused_with_a_message(api):
    user = UserFactory(username="scripter")
    body = obtain(api, "scripter")
    tokens.revoke(user, body["id"])
    response = with_key(body["key"]).get("/api/me/stats/")
    assert response.status_code == 401 and "This token was revoked on" in response.json()["detail"]
    assert with_key("dyn_not-a-key").get("/api/me/stats/").json()["detail"] == "Invalid token."
    assert with_key("0123456789abcdef0123456789abcdef01234567").get("/api/me/stats/").status_code == 401  # old-style


def test_users_list_create_and_revoke_their_own_tokens_over_the_api(client):
    user = UserFactory(username="scripter")
    client.force_login(user)
    created = client.post("/api/tokens/", {"name": "ci", "access": "read"}, content_type="application/json")
    assert created.status_code == 201 and created.json()["key"].startswith("dro_")
    listed = client.get("/api/tokens/").json()
    assert [(t["name"], t["access"], t["state"]) for t in listed] == [("ci", "read", "active")]
    assert "key" not in listed[0] and "key_hash" not in listed[0]
    assert client.delete(f"/api/tokens/{created.json()['id']}/").status_code == 204
    assert client.get("/api/tokens/").json()[0]["state"] == "revoked"
    assert with_key(created.json()["key"]).get("/api/tasks/").status_code == 401


def test_nobody_sees_or_revokes_someone_elses_token(client, api):
    UserFactory(username="owner-of-it")
    theirs = obtain(api, "owner-of-it")
    client.force_login(UserFactory(username="stranger"))
    assert client.get("/api/tokens/").json() == []
    assert client.delete(f"/api/tokens/{theirs['id']}/").status_code == 404
    assert client.post(f"/me/tokens/{theirs['id']}/revoke/").status_code in (302, 404)
    assert ApiToken.objects.get(pk=theirs["id"]).revoked_at is None


def test_a_token_cannot_create_another_token(api):
    UserFactory(username="scripter")
    body = obtain(api, "scripter")
    response = with_key(body["key"]).post("/api/tokens/", {"name": "successor"}, format="json")
    assert response.status_code == 403 and "A token cannot create another token" in response.json()["detail"]
    assert ApiToken.objects.count() == 1


def test_a_token_may_revoke_itself(api):
    UserFactory(username="scripter")
    body = obtain(api, "scripter")
    client = with_key(body["key"])
    assert client.delete(f"/api/tokens/{body['id']}/").status_code == 204
    assert client.get("/api/tokens/").status_code == 401


def test_the_my_tokens_page_creates_shows_the_key_once_lists_and_revokes(client):
    user = UserFactory(username="scripter")
    client.force_login(user)
    page = client.post("/me/tokens/", {"name": "notebook", "access": "full"})
    assert page.status_code == 200
    token = ApiToken.objects.get(user=user)
    key = page.context["new_key"]
    assert key.startswith("dyn_") and key in page.content.decode() and token.hint == key[:10]
    again = client.get("/me/tokens/").content.decode()
    assert key not in again and "notebook" in again and token.hint in again
    response = client.post(f"/me/tokens/{token.pk}/revoke/", follow=True)
    assert "is revoked; it no longer works" in response.content.decode()
    assert ApiToken.objects.get(pk=token.pk).state == "revoked"
    assert client.get(f"/me/tokens/{token.pk}/revoke/").status_code == 405  # revoking is a POST


def test_read_only_tokens_expire_and_are_revoked_like_every_token(settings, monkeypatch):
    settings.TOKEN_TTL_DAYS = 1
    user = UserFactory(username="reader")
    token, raw = ReadOnlyToken.issue(user, "datasets")
    assert raw.startswith("dro_") and token.access == "read"
    assert timezone.now() < token.expires_at <= timezone.now() + timedelta(days=1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/tasks/").status_code == 200
    later = token.expires_at + timedelta(seconds=1)  # a day later (the token was just used: it is cached too)
    monkeypatch.setattr("accounts.tokens.timezone.now", lambda: later)
    response = client.get("/api/tasks/")
    assert response.status_code == 401 and "expired" in response.json()["detail"]
    assert [t.pk for t in tokens.owned(user)] == [token.pk]  # the same list as every other token


def test_a_read_only_token_may_not_write_anything(api):
    user = UserFactory(username="reader")
    _, raw = ReadOnlyToken.issue(user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    for path in ("/api/tokens/", "/api/tokens/readonly/", "/api/tasks/x/examples/"):
        response = client.post(path, {}, format="json")
        assert response.status_code == 403 and "read-only token may only read" in response.json()["detail"]
