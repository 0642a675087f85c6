"""Sign-in limits that a third party cannot turn into a lockout (accounts.throttles).

An attacker failing against `admin` from one address stops only that address; the owner signs in from a
client the account knows (device cookie, or an address it signed in from) and from a brand-new address too.
Only failures spread over many addresses fill the account's ceiling, and that refuses new clients while the
known ones are merely slowed. Behind a proxy the address is read from X-Forwarded-For as TRUSTED_PROXY_COUNT
says. The page, the admin's login page and the token endpoint behave alike.
"""

from __future__ import annotations

import time

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.throttles import DEVICE_COOKIE, SLOWDOWN_S
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db
ATTACKER, OWNER_HOME, NEW_PLACE, PROXY = "198.51.100.66", "203.0.113.10", "192.0.2.77", "10.0.0.2"
REFUSED = "Too many failed sign-in attempts; try again in"


@pytest.fixture
def admin_account(settings):
    settings.LOGIN_RATE = "5/min"
    settings.LOGIN_ACCOUNT_RATE = "50/min"
    return UserFactory(username="admin", is_staff=True, is_superuser=True)


def sign_in(client: Client, password: str = "wrong", username: str = "admin", address: str | None = None):
    extra = {"REMOTE_ADDR": address} if address else {}
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra)


def token(api: APIClient, password: str = "wrong", username: str = "admin", address: str | None = None):
    extra = {"REMOTE_ADDR": address} if address else {}
    return api.post("/api/auth/token/", {"username": username, "password": password}, format="json", **extra)


def hammer(send, times: int = 50) -> list[int]:
    return [send().status_code for _ in range(times)]


def owners_browser() -> Client:
    """The owner's browser, which signed in from home once (and so holds the device cookie)."""
    browser = Client(REMOTE_ADDR=OWNER_HOME)
    assert sign_in(browser, PASSWORD).status_code == 302
    browser.post("/accounts/logout/")
    return browser


def test_an_attacker_failing_50_times_at_one_address_is_refused_after_5(admin_account):
    attacker = Client(REMOTE_ADDR=ATTACKER)
    codes = hammer(lambda: sign_in(attacker))
    assert codes == [200] * 5 + [429] * 45
    refused = sign_in(attacker, PASSWORD)  # the right password is not even checked there now
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert REFUSED in refused.content.decode() and 'name="username"' in refused.content.decode()
    assert "_auth_user_id" not in attacker.session


def test_the_attacker_does_not_stop_the_owner_at_a_known_or_a_brand_new_address(admin_account):
    browser = owners_browser()
    attacker = Client(REMOTE_ADDR=ATTACKER)
    assert hammer(lambda: sign_in(attacker)).count(429) == 45
    assert sign_in(browser, PASSWORD).status_code == 302  # known-good: the device cookie, from home
    assert sign_in(Client(REMOTE_ADDR=OWNER_HOME), PASSWORD).status_code == 302  # home, without the cookie
    fresh = Client(REMOTE_ADDR=NEW_PLACE)  # never seen: one address alone cannot fill the account's ceiling
    assert sign_in(fresh, PASSWORD).status_code == 302 and fresh.session["_auth_user_id"] == str(admin_account.pk)


def test_an_address_spraying_many_accounts_is_refused(admin_account):
    names = [f"member{n}" for n in range(7)]
    for name in names:
        UserFactory(username=name)
    sprayer = Client(REMOTE_ADDR=ATTACKER)
    codes = [sign_in(sprayer, "Winter2025!", name).status_code for name in names]
    assert codes == [200] * 5 + [429] * 2
    assert sign_in(sprayer, PASSWORD, "member6").status_code == 429  # the whole address, whatever account
    assert sign_in(Client(REMOTE_ADDR=NEW_PLACE), PASSWORD, "member6").status_code == 302  # others are not


def test_failures_from_many_addresses_refuse_new_clients_and_only_slow_known_ones(admin_account, settings):
    settings.LOGIN_ACCOUNT_RATE = "10/min"
    browser = owners_browser()
    for n in range(10):  # a botnet: two failures from each of five addresses
        assert sign_in(Client(REMOTE_ADDR=f"198.51.100.{n // 2 + 1}")).status_code == 200
    refused = sign_in(Client(REMOTE_ADDR=NEW_PLACE), PASSWORD)
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1 and REFUSED in refused.content.decode()

    started = time.monotonic()
    assert sign_in(browser, PASSWORD, address="192.0.2.200").status_code == 302  # the cookie, on another network
    assert sign_in(Client(REMOTE_ADDR=OWNER_HOME), PASSWORD).status_code == 302  # the known address, no cookie
    assert time.monotonic() - started >= 2 * SLOWDOWN_S  # slowed down, not refused


def test_the_device_cookie_works_behind_a_shared_address_and_cannot_be_forged(admin_account):
    shared = "203.0.113.99"  # the office NAT: the owner and the attacker share it
    browser = Client(REMOTE_ADDR=shared)
    assert sign_in(browser, PASSWORD).status_code == 302
    cookie = browser.cookies[DEVICE_COOKIE]
    assert cookie["httponly"] and "admin" not in cookie.value
    browser.post("/accounts/logout/")
    attacker = Client(REMOTE_ADDR=shared)
    assert hammer(lambda: sign_in(attacker), 6)[-1] == 429
    assert sign_in(Client(REMOTE_ADDR=shared), PASSWORD).status_code == 429  # no cookie: the address is refused
    forged = Client(REMOTE_ADDR=shared)
    forged.cookies[DEVICE_COOKIE] = cookie.value[:-4] + "AAAA"
    assert sign_in(forged, PASSWORD).status_code == 429
    assert sign_in(browser, PASSWORD).status_code == 302


def test_a_device_that_fails_too_often_is_refused_too(admin_account):
    browser = owners_browser()  # a stolen cookie is no licence to guess
    assert hammer(lambda: sign_in(browser, address=NEW_PLACE), 6) == [200] * 5 + [429]
    assert sign_in(Client(REMOTE_ADDR=OWNER_HOME), PASSWORD).status_code == 302


def test_the_token_endpoint_behaves_the_same(admin_account):
    assert token(APIClient(REMOTE_ADDR=OWNER_HOME), PASSWORD).status_code == 200  # the owner's script, once
    attacker = APIClient(REMOTE_ADDR=ATTACKER)
    assert hammer(lambda: token(attacker)) == [400] * 5 + [429] * 45
    refused = token(attacker, PASSWORD)
    assert refused.status_code == 429 and refused["Retry-After"] and refused.json()["detail"].startswith(REFUSED)
    assert token(APIClient(REMOTE_ADDR=OWNER_HOME), PASSWORD).status_code == 200
    assert token(APIClient(REMOTE_ADDR=NEW_PLACE), PASSWORD).status_code == 200
    assert ApiToken.objects.filter(user=admin_account).count() == 3

    for n in range(7):
        UserFactory(username=f"member{n}")
    sprayer = APIClient(REMOTE_ADDR="198.51.100.67")
    assert [token(sprayer, username=f"member{n}").status_code for n in range(7)] == [400] * 5 + [429] * 2


def test_the_admin_login_page_shares_the_rules(admin_account):
    attacker = Client(REMOTE_ADDR=ATTACKER)
    assert hammer(lambda: attacker.post("/admin/login/", {"username": "admin", "password": "x"}), 6)[-1] == 429
    owner = Client(REMOTE_ADDR=NEW_PLACE)
    assert owner.post("/admin/login/", {"username": "admin", "password": PASSWORD}).status_code == 302
    assert DEVICE_COOKIE in owner.cookies  # and this browser is known from now on


def test_behind_a_proxy_the_address_comes_from_the_trusted_hop(admin_account, settings):
    settings.TRUSTED_PROXY_COUNT = 1  # docker-compose's nginx: REMOTE_ADDR is the proxy, it appends the client

    def via_proxy(client_address: str, written_by_client: str = "") -> Client:
        forwarded = f"{written_by_client}, {client_address}" if written_by_client else client_address
        return Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded)

    codes = [sign_in(via_proxy(ATTACKER, f"192.0.2.{n}")).status_code for n in range(7)]  # spoofing is no use
    assert codes == [200] * 5 + [429] * 2
    assert sign_in(via_proxy(NEW_PLACE), PASSWORD).status_code == 302  # the other users of the proxy are not


def test_without_the_proxy_setting_everyone_behind_the_proxy_shares_its_address(admin_account, settings):
    settings.TRUSTED_PROXY_COUNT = 0
    for n in range(5):
        sign_in(Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}"), username=f"someone{n}")
    refused = sign_in(Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=NEW_PLACE), PASSWORD)
    assert refused.status_code == 429  # the header is not trusted: one address for all (docs/DEPLOY.md)


def test_ipv6_addresses_count_per_64(admin_account):
    codes = [sign_in(Client(REMOTE_ADDR=f"2001:db8:1:2::{n:x}")).status_code for n in range(1, 8)]
    assert codes == [200] * 5 + [429] * 2
    assert sign_in(Client(REMOTE_ADDR="2001:db8:1:3::1"), PASSWORD).status_code == 302  # another /64
