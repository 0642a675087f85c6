"""Sign-up and sign-in limits, counted by the site's rate limiter (dynabench_site.throttles).

Sign-up: SIGNUP_RATE accounts per address, counted only when an account is actually created, so a mistyped
form never uses the allowance.

Sign-in: only failures count, so a class signing in together from one address is never held back. The limits
are shaped so that a third party cannot turn them into a lockout of someone else's account:

- per (account, address) and per address, LOGIN_RATE failures: that address is refused (429, Retry-After) for
  the rest of the window; an address guessing one password, or trying one password on many accounts, stops;
- per account, LOGIN_ACCOUNT_RATE failures from every address together (a guess spread over many addresses):
  clients the account has never signed in from are refused; *known-good* clients are only slowed down
  (SLOWDOWN_S per attempt), never refused;
- a known-good client holds a device cookie (OWASP's "device cookies") naming the account: a signed,
  HTTP-only cookie set by every successful sign-in, kept per browser, so it survives changing addresses and
  NAT. It exempts that browser from the address limits, which its own counter (LOGIN_RATE failures per
  device) replaces, so a stolen cookie is no licence to guess. Scripts keep no cookie: an address that signed
  into the account before (remembered in the cache for KNOWN_ADDRESS_DAYS) is known-good for the account
  ceiling too.

One address failing against an account can never fill that account's ceiling (LOGIN_ACCOUNT_RATE is well
above LOGIN_RATE), so an attacker at one address stops only themselves: the owner signs in from anywhere.
IPv6 addresses count per /64. If the cache is down (Redis outage), sign-up and sign-in stay open: the limits
are a brake, not the only defence.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils.crypto import salted_hmac

from dynabench_site import throttles

log = logging.getLogger(__name__)

SCOPE = "signup"
MESSAGE = "Too many accounts were created from your address; try again in {wait}."

LOGIN_SCOPE, ACCOUNT_SCOPE = "login", "login-account"
LOGIN_MESSAGE = "Too many failed sign-in attempts; try again in {wait}."
DEVICE_COOKIE = "dynabench_device"
DEVICE_SALT = "accounts.throttles.device"
DEVICE_DAYS = 180
DEVICE_ACCOUNTS = 10  # the accounts one browser is remembered for (the latest ones)
KNOWN_ADDRESS_DAYS = 30
SLOWDOWN_S = 1.0


# --- sign-up ---------------------------------------------------------------------------------------


def _idents(ip: str | None) -> list[str]:
    return [f"ip:{ip or 'unknown'}"]


def signup_wait(ip: str | None) -> int | None:
    """Seconds until `ip` may create another account (None: it may now). Counts nothing."""
    return throttles.hit(SCOPE, _idents(ip), settings.SIGNUP_RATE, count=False)


def refusal(wait: int) -> str:
    return MESSAGE.format(wait=throttles.wait_text(wait))


def count_signup(ip: str | None) -> None:
    throttles.record(SCOPE, _idents(ip), settings.SIGNUP_RATE)


# --- sign-in ---------------------------------------------------------------------------------------


def _account(username: str) -> str:
    """The account a username names, as a counter's key: case and surrounding spaces ignored, hashed (any text
    can be typed; keys stay short and hold no name)."""
    name = (username or "").strip().lower()[:150]
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:24] if name else ""


def _device_mark(account: str) -> str:
    """The account as a device cookie names it (keyed with SECRET_KEY: the cookie does not say who signed in)."""
    return salted_hmac(DEVICE_SALT, account).hexdigest()[:20]


@dataclass(frozen=True)
class Device:
    nonce: str
    marks: tuple[str, ...]


def read_device(request) -> Device | None:
    """The request's device cookie, when it is one this site signed and not older than DEVICE_DAYS."""
    django_request: HttpRequest = getattr(request, "_request", request)
    raw = django_request.get_signed_cookie(DEVICE_COOKIE, default=None, salt=DEVICE_SALT,
                                           max_age=DEVICE_DAYS * 86400)
    try:
        data = json.loads(raw) if raw else None
        return Device(str(data["n"]), tuple(str(m) for m in data["a"])) if isinstance(data, dict) else None
    except (ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class Attempt:
    """One sign-in attempt: which account (hashed), from which address group, with which device cookie."""

    account: str
    address: str
    device: Device | None

    @classmethod
    def of(cls, request, username: str) -> Attempt:
        address = throttles.address_group(throttles.client_address(request))
        return cls(_account(username), address, read_device(request))

    @property
    def trusted_device(self) -> bool:
        return bool(self.account and self.device and _device_mark(self.account) in self.device.marks)

    def known_address(self) -> bool:
        try:
            return bool(self.account) and cache.get(_known_key(self.account, self.address)) is not None
        except Exception:  # no cache: nobody is known, and no limit applies anyway
            return False

    def address_idents(self) -> list[str]:
        pair = [f"pair:{self.account}@{self.address}"] if self.account else []
        return [f"ip:{self.address}", *pair]

    def own_idents(self) -> list[str]:
        """The counters that may refuse this client: its device's, for a browser known to the account (the
        address limits do not apply to it), else its address's and its (account, address) pair's."""
        return [f"device:{self.device.nonce}"] if self.trusted_device else self.address_idents()


def _known_key(account: str, address: str) -> str:
    return f"login:known:{account}:{address}"


def login_wait(request, username: str) -> int | None:
    """Before a password is checked (pages and API): the seconds to wait when this client must be refused, else
    None, after slowing a known-good client down when the account's ceiling is reached. Counts nothing."""
    attempt = Attempt.of(request, username)
    wait = throttles.hit(LOGIN_SCOPE, attempt.own_idents(), settings.LOGIN_RATE, count=False)
    if wait is not None or not attempt.account:
        return wait
    wait = throttles.hit(ACCOUNT_SCOPE, [f"user:{attempt.account}"], settings.LOGIN_ACCOUNT_RATE, count=False)
    if wait is None:
        return None
    if attempt.trusted_device or attempt.known_address():
        time.sleep(SLOWDOWN_S)  # a brake on guessing through a known client, never a lockout of its owner
        return None
    return wait


def login_refusal(wait: int) -> str:
    return LOGIN_MESSAGE.format(wait=throttles.wait_text(wait))


def login_failed(request, username: str) -> None:
    """Count a failed sign-in: against its address, (account, address), the account, and its device cookie."""
    attempt = Attempt.of(request, username)
    idents = attempt.address_idents()
    if attempt.device:
        idents.append(f"device:{attempt.device.nonce}")
    throttles.record(LOGIN_SCOPE, idents, settings.LOGIN_RATE)
    if attempt.account:
        throttles.record(ACCOUNT_SCOPE, [f"user:{attempt.account}"], settings.LOGIN_ACCOUNT_RATE)


def login_succeeded(request, response: HttpResponse, username: str) -> HttpResponse:
    """Remember the client as known-good for the account: its address (cache) and its browser (device cookie)."""
    attempt = Attempt.of(request, username)
    if not attempt.account:
        return response
    try:
        cache.set(_known_key(attempt.account, attempt.address), 1, KNOWN_ADDRESS_DAYS * 86400)
    except Exception:
        log.warning("known sign-in address not remembered (cache error)", exc_info=True)
    device = attempt.device or Device(secrets.token_urlsafe(16), ())
    mark = _device_mark(attempt.account)
    marks = [*(m for m in device.marks if m != mark), mark][-DEVICE_ACCOUNTS:]
    response.set_signed_cookie(DEVICE_COOKIE, json.dumps({"n": device.nonce, "a": marks}), salt=DEVICE_SALT,
                               max_age=DEVICE_DAYS * 86400, httponly=True, samesite="Lax",
                               secure=settings.SESSION_COOKIE_SECURE)
    return response
