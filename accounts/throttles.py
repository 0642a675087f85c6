"""Sign-ups per address: SIGNUP_RATE accounts, counted by the site's rate limiter (dynabench_site.throttles).

Counted only when an account is actually created, so a mistyped form never uses the allowance. If the
cache is down (Redis outage), sign-up stays open: the limit is a brake, not the only defence (validation
never lets linked accounts vote on each other's examples).
"""

from __future__ import annotations

from django.conf import settings

from dynabench_site import throttles

SCOPE = "signup"
MESSAGE = "Too many accounts were created from your address; try again in {wait}."


def _idents(ip: str | None) -> list[str]:
    return [f"ip:{ip or 'unknown'}"]


def signup_wait(ip: str | None) -> int | None:
    """Seconds until `ip` may create another account (None: it may now). Counts nothing."""
    return throttles.hit(SCOPE, _idents(ip), settings.SIGNUP_RATE, count=False)


def refusal(wait: int) -> str:
    return MESSAGE.format(wait=throttles.wait_text(wait))


def check_signup_allowed(ip: str | None) -> None:
    """Raise Throttled (429) when `ip` created its allowance of accounts within the window."""
    wait = signup_wait(ip)
    if wait is not None:
        raise throttles.Throttled(refusal(wait), wait)


def count_signup(ip: str | None) -> None:
    throttles.record(SCOPE, _idents(ip), settings.SIGNUP_RATE)
