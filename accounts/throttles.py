"""Sign-ups per address: a small limit in the cache, like the project's other throttles.

Counted only when an account is actually created, so a mistyped form never uses the allowance. If the
cache is down (Redis outage), sign-up stays open: the limit is a brake, not the only defence (validation
never lets linked accounts vote on each other's examples).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import cache

from dynabench_site.errors import DomainError

log = logging.getLogger(__name__)


class TooManySignups(DomainError):
    status_code = 429
    code = "throttled"

    def __init__(self, wait: int):
        super().__init__(f"Too many accounts were created from your address; try again in {wait} seconds.")
        self.retry_after = wait


def _rate() -> tuple[int, int]:
    """SIGNUP_RATE as (accounts, seconds): "5/hour" is (5, 3600), as DRF reads rates."""
    count, period = settings.SIGNUP_RATE.split("/")
    return int(count), {"s": 1, "m": 60, "h": 3600, "d": 86400}[period[0]]


def _key(ip: str | None) -> str:
    return f"throttle_signup_{ip or 'unknown'}"


def _recent(ip: str | None, now: float) -> list[float]:
    _, window = _rate()
    return [t for t in cache.get(_key(ip), []) if t > now - window]


def check_signup_allowed(ip: str | None) -> None:
    """Raise TooManySignups when `ip` created its allowance of accounts within the window."""
    limit, window = _rate()
    now = time.time()
    try:
        recent = _recent(ip, now)
    except Exception:  # a cache outage must not close sign-up
        log.warning("sign-up limit unavailable (cache error); allowing", exc_info=True)
        return
    if len(recent) >= limit:
        raise TooManySignups(max(1, int(min(recent) + window - now)))


def count_signup(ip: str | None) -> None:
    _, window = _rate()
    now = time.time()
    try:
        cache.set(_key(ip), [*_recent(ip, now), now], window)
    except Exception:
        log.warning("sign-up limit not recorded (cache error)", exc_info=True)
