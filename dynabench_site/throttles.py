"""Rate limits kept in the cache: one counter for the API (DRF throttle classes) and for pages (a check
that returns the wait, so the page can show its form again with the message).

A limit is a sliding window per (scope, identity): the times of the requests it counted in the last
period. Over the limit, nothing is counted and the caller learns how long to wait (429, Retry-After).

The cache may fail (Redis down). A limit is a brake, never a gate that can break the site: when the cache
raises, the request goes through unlimited and the failure is logged. Above all a submission is saved
first; a throttle in front of it must never turn it into a 500.

The client address (`client_address`) is REMOTE_ADDR unless TRUSTED_PROXY_COUNT says how many proxies stand
in front of the app: then it is the address the outermost of them saw, read from X-Forwarded-For. Sign-in
limits, built on these counters, live in accounts.throttles.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Sequence

from django.conf import settings
from django.core.cache import cache
from rest_framework import exceptions
from rest_framework.throttling import BaseThrottle

from dynabench_site.errors import DomainError

log = logging.getLogger(__name__)

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class Throttled(DomainError):
    """Too many requests of one kind (HTTP 429, with Retry-After)."""

    status_code = 429
    code = "throttled"

    def __init__(self, message: str, wait: int):
        super().__init__(message)
        self.retry_after = wait


def parse_rate(rate: str) -> tuple[int, int]:
    """"5/hour" as (5, 3600): a count per s, min, hour or day (as DRF and the settings' env_rate read it)."""
    count, _, period = rate.partition("/")
    return int(count), PERIODS[period[0]]


def _key(scope: str, ident: str) -> str:
    return f"throttle:{scope}:{ident}"


def _recent(key: str, window: int, now: float) -> list[float]:
    return [t for t in cache.get(key, []) if t > now - window]


def hit(scope: str, idents: Sequence[str], rate: str, *, count: bool = True) -> int | None:
    """Count one request against every identity in `idents` (e.g. an address and a username).

    Returns None when all are within the limit (and counts the request for each, unless `count` is false),
    else the seconds until the most-used one has room again (and counts nothing). A cache that raises
    lets the request through.
    """
    limit, window = parse_rate(rate)
    now = time.time()
    try:
        history = {ident: _recent(_key(scope, ident), window, now) for ident in idents}
        full = [times for times in history.values() if len(times) >= limit]
        if full:
            return max(1, max(int(times[-limit] + window - now) + 1 for times in full))
        if count:
            for ident, times in history.items():
                cache.set(_key(scope, ident), [*times, now], window)
    except Exception:  # any cache failure: skip the limit, never fail the request
        log.warning("rate limit %r unavailable (cache error); allowing the request", scope, exc_info=True)
    return None


def record(scope: str, idents: Sequence[str], rate: str) -> None:
    """Count a request that `hit(..., count=False)` let through (e.g. only once an account was created)."""
    _, window = parse_rate(rate)
    now = time.time()
    try:
        for ident in idents:
            key = _key(scope, ident)
            cache.set(key, [*_recent(key, window, now), now], window)
    except Exception:
        log.warning("rate limit %r not recorded (cache error)", scope, exc_info=True)


def client_address(request) -> str:
    """The address a request came from.

    TRUSTED_PROXY_COUNT = 0 (the default): REMOTE_ADDR, the peer of the connection; X-Forwarded-For is whatever
    the client wrote and is never read. N > 0: the app is reachable only through N proxies, each appending the
    address it saw to X-Forwarded-For (nginx: `$proxy_add_x_forwarded_for`), so the N-th entry from the right is
    the address the outermost proxy saw; entries further left were written by the client and are never read.
    Fewer entries than proxies: the leftmost one (as DRF's NUM_PROXIES); an entry that is not an address: the
    peer. Behind a proxy with 0, every client shares the proxy's address."""
    peer = request.META.get("REMOTE_ADDR") or "unknown"
    proxies = settings.TRUSTED_PROXY_COUNT
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    if proxies <= 0 or not hops:
        return peer
    candidate = hops[-min(proxies, len(hops))]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return peer


def address_group(address: str) -> str:
    """What one party's addresses have in common: the address itself (IPv4), or its /64 network (IPv6: one
    subscriber usually gets a whole /64, so counting single IPv6 addresses would count nothing)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped:  # ::ffff:192.0.2.1 is 192.0.2.1
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def wait_text(wait: int) -> str:
    if wait < 120:
        return f"{wait} seconds"
    return f"{(wait + 59) // 60} minutes"


class RateThrottle(BaseThrottle):
    """A DRF throttle over `hit`: the rate is the setting `rate_setting`, the identities come from `idents`.
    Over the limit it raises DRF's Throttled with `message` (formatted with `wait`): 429 with Retry-After."""

    scope: str
    rate_setting: str
    message: str = "Too many requests; try again in {wait}."

    def idents(self, request, view) -> list[str]:
        raise NotImplementedError

    def allow_request(self, request, view) -> bool:
        idents = self.idents(request, view)
        if not idents:
            return True
        wait = hit(self.scope, idents, getattr(settings, self.rate_setting))
        if wait is not None:
            raise exceptions.Throttled(wait=wait, detail=self.message.format(wait=wait_text(wait)))
        return True


class PerUserThrottle(RateThrottle):
    """Counts per signed-in account; anonymous callers are left to the permissions."""

    def idents(self, request, view) -> list[str]:
        return [f"user:{request.user.pk}"] if request.user.is_authenticated else []


class VoteThrottle(PerUserThrottle):
    scope = "vote"
    rate_setting = "VOTE_RATE"
    message = "You are voting faster than the limit allows; try again in {wait}."


class TokenThrottle(PerUserThrottle):
    scope = "token"
    rate_setting = "TOKEN_RATE"
    message = "You created too many API tokens recently; try again in {wait}."


def check_vote(user) -> None:
    """For pages: raise Throttled when `user` voted more than VOTE_RATE allows."""
    wait = hit(VoteThrottle.scope, [f"user:{user.pk}"], settings.VOTE_RATE)
    if wait is not None:
        raise Throttled(VoteThrottle.message.format(wait=wait_text(wait)), wait)


def check_token(user) -> None:
    """For pages and services: raise Throttled when `user` created more tokens than TOKEN_RATE allows."""
    wait = hit(TokenThrottle.scope, [f"user:{user.pk}"], settings.TOKEN_RATE)
    if wait is not None:
        raise Throttled(TokenThrottle.message.format(wait=wait_text(wait)), wait)
