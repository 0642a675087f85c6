"""Rate limits on sign-in (page and API), sign-up, token creation and votes: 429 with Retry-After and a message
(pages: the form again, with the message); a cache that is down never turns a request into a 500."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import ApiToken
from tests.factories import PASSWORD, ExampleFactory, UserFactory

pytestmark = pytest.mark.django_db
SIGNUP_PASSWORD = "a-long-enough-pass-phrase-42"


def login_page(client, username, password="wrong"):
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_the_login_page_limits_attempts_and_shows_the_form_again(settings):
    settings.LOGIN_RATE = "3/min"
    UserFactory(username="victim")
    client = Client(REMOTE_ADDR="198.51.100.7")
    for _ in range(3):
        assert login_page(client, "victim").status_code == 200  # wrong password: the form again, 200
    refused = login_page(client, "victim", PASSWORD)  # even the right password is not checked now
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    page = refused.content.decode()
    assert "Too many failed sign-in attempts; try again in" in page and 'name="username"' in page
    assert "_auth_user_id" not in client.session


def test_successful_sign_ins_from_one_address_are_never_held_back(settings):
    settings.LOGIN_RATE = "2/min"
    for name in ("pupil1", "pupil2", "pupil3", "pupil4"):  # a class behind one address
        UserFactory(username=name)
        assert login_page(Client(REMOTE_ADDR="198.51.100.50"), name, PASSWORD).status_code == 302


def test_sign_in_failures_from_other_addresses_never_refuse_an_address(settings):
    """Failures count per address and per (account, address): failing at one address does not refuse another
    (this test used to assert the opposite, the per-username count that let anyone lock an account out;
    tests/site/test_signin_throttle.py holds the rest of the sign-in rules)."""
    settings.LOGIN_RATE = "2/min"
    UserFactory(username="victim")
    for address in ("198.51.100.1", "198.51.100.2"):
        assert login_page(Client(REMOTE_ADDR=address), "victim").status_code == 200
    assert login_page(Client(REMOTE_ADDR="198.51.100.3"), "victim").status_code == 200  # the form again, not 429
    assert login_page(Client(REMOTE_ADDR="198.51.100.3"), "victim", PASSWORD).status_code == 302


def test_the_admin_login_page_shares_the_sign_in_limit(settings):
    settings.LOGIN_RATE = "1/min"
    UserFactory(username="boss", is_staff=True, is_superuser=True)
    client = Client(REMOTE_ADDR="198.51.100.11")
    assert login_page(client, "boss").status_code == 200
    refused = client.post("/admin/login/", {"username": "boss", "password": PASSWORD})
    assert refused.status_code == 429 and refused["Retry-After"]
    assert "Too many failed sign-in attempts" in refused.content.decode() and "_auth_user_id" not in client.session


def test_the_token_endpoint_shares_the_sign_in_limit(settings):
    settings.LOGIN_RATE = "2/min"
    UserFactory(username="scripter")
    api = APIClient(REMOTE_ADDR="198.51.100.9")
    assert login_page(Client(REMOTE_ADDR="198.51.100.9"), "scripter").status_code == 200
    assert api.post("/api/auth/token/", {"username": "scripter", "password": "nope"}, format="json").status_code == 400
    refused = api.post("/api/auth/token/", {"username": "scripter", "password": PASSWORD}, format="json")
    assert refused.status_code == 429 and refused["Retry-After"]
    assert refused.json()["detail"].startswith("Too many failed sign-in attempts; try again in")
    assert not ApiToken.objects.exists()


def test_sign_up_over_the_limit_shows_the_form_again_with_retry_after(settings):
    settings.SIGNUP_RATE = "1/hour"
    client = Client(REMOTE_ADDR="203.0.113.5")
    form = {"username": "first", "email": "f@example.org", "password1": SIGNUP_PASSWORD, "password2": SIGNUP_PASSWORD}
    assert client.post("/accounts/signup/", form).status_code == 302
    client = Client(REMOTE_ADDR="203.0.113.5")
    refused = client.post("/accounts/signup/", {**form, "username": "second", "email": "s@example.org"})
    assert refused.status_code == 429 and 3500 <= int(refused["Retry-After"]) <= 3601
    assert "Too many accounts were created from your address; try again in 60 minutes." in refused.content.decode()
    assert 'name="username"' in refused.content.decode() and not User.objects.filter(username="second").exists()


def test_token_creation_is_limited_per_account(settings, client):
    settings.TOKEN_RATE = "2/hour"
    client.force_login(UserFactory(username="scripter"))
    for name in ("one", "two"):
        assert client.post("/api/tokens/", {"name": name}, content_type="application/json").status_code == 201
    refused = client.post("/api/tokens/", {"name": "three"}, content_type="application/json")
    assert refused.status_code == 429 and refused["Retry-After"]
    assert refused.json()["detail"].startswith("You created too many API tokens recently")
    page = client.post("/me/tokens/", {"name": "four", "access": "full"})
    assert page.status_code == 429 and "You created too many API tokens recently" in page.content.decode()
    assert ApiToken.objects.count() == 2


def test_votes_are_limited_per_validator(settings, client_for, open_round):
    settings.VOTE_RATE = "2/min"
    validator = client_for("validator")
    examples = [ExampleFactory(round=open_round) for _ in range(3)]
    for example in examples[:2]:
        assert validator.post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"}, format="json").status_code == 201
    refused = validator.post(f"/api/examples/{examples[2].pk}/validations/", {"verdict": "correct"}, format="json")
    assert refused.status_code == 429 and refused["Retry-After"]
    assert refused.json()["detail"].startswith("You are voting faster than the limit allows")


def test_expert_votes_on_the_page_count_against_the_same_limit(settings, client, personas, open_round):
    settings.VOTE_RATE = "1/min"
    client.force_login(personas.owner)
    first, second = ExampleFactory(round=open_round), ExampleFactory(round=open_round)
    url = "/tasks/sentiment/expert/{}/resolve/"
    assert client.post(url.format(first.pk), {"verdict": "correct"}).status_code == 302
    response = client.post(url.format(second.pk), {"verdict": "correct"}, follow=True)
    assert "You are voting faster than the limit allows" in response.content.decode()
    assert not second.validations.exists()


def test_a_cache_outage_leaves_sign_in_sign_up_tokens_and_votes_working(redis_down, client_for, open_round, settings):
    settings.LOGIN_RATE = settings.SIGNUP_RATE = settings.TOKEN_RATE = settings.VOTE_RATE = "1/hour"
    UserFactory(username="scripter")
    for _ in range(2):  # over every limit, had they been counted
        token = APIClient().post("/api/auth/token/", {"username": "scripter", "password": PASSWORD}, format="json")
        assert token.status_code == 200
        assert login_page(Client(), "scripter", PASSWORD).status_code == 302
    form = {"username": "new-one", "email": "n@example.org", "password1": SIGNUP_PASSWORD, "password2": SIGNUP_PASSWORD}
    assert Client().post("/accounts/signup/", form).status_code == 302
    vote = client_for("validator").post(f"/api/examples/{ExampleFactory(round=open_round).pk}/validations/",
                                        {"verdict": "correct"}, format="json")
    assert vote.status_code == 201
