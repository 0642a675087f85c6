"""A wake-up channel between processes, on the site's Redis: one side pushes a token, the other blocks until it comes.

A request that waits for work another process finishes (the submission waiting for its verdict:
`annotation.scoring.waiting`) blocks on a short-lived Redis list (BLPOP, at most the time it asks for) instead of
polling the database: no CPU while it waits, and it wakes as soon as the worker pushes. The channel lives on the
default cache's Redis (CACHE_URL: settings builds `CACHES["default"]` from it; a test may point the cache elsewhere
and the channel follows), under the cache's own key prefix and version (`key`), so a deployment's channels never
meet another's on a shared server.

It uses a public `redis.Redis` client (`redis.Redis.from_url` on the cache's location), one per address and
process, shared by the process's threads (redis-py's pool is thread-safe and starts afresh after a fork). Without a
Redis cache (the embedded default: local memory) there is no channel (`client()` is None) and the waiter polls what
it waits for; a Redis that is down makes `announce` a no-op and `wait` raise, and the waiter polls too.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import redis
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.db import transaction

log = logging.getLogger(__name__)

TTL_SECONDS = 60  # a token nobody takes is gone after this long
# The options of Django's Redis cache that are Django's own, not the Redis client's.
_DJANGO_OPTIONS = {"parser_class", "pool_class", "serializer"}
_clients: dict[tuple[str, tuple[tuple[str, Any], ...]], redis.Redis] = {}
_lock = threading.Lock()


def location() -> tuple[str, dict[str, Any]] | None:
    """The default cache's Redis address (its first server: the one Django writes to) and client options, or None
    when the default cache is not Redis."""
    if not isinstance(caches["default"], RedisCache):
        return None
    config = settings.CACHES["default"]
    servers = config.get("LOCATION") or ""
    first = (servers.split(",") if isinstance(servers, str) else list(servers))[0].strip()
    if not first:
        return None
    options = {k: v for k, v in (config.get("OPTIONS") or {}).items() if k not in _DJANGO_OPTIONS}
    return first, options


def client() -> redis.Redis | None:
    """This process's client of the channel's Redis, or None without a Redis cache (the waiter polls instead)."""
    where = location()
    if where is None:
        return None
    url, options = where
    known = (url, tuple(sorted(options.items())))
    found = _clients.get(known)
    if found is None:
        with _lock:
            found = _clients.get(known)
            if found is None:
                found = _clients[known] = redis.Redis.from_url(url, **options)
    return found


def key(name: str) -> str:
    """The Redis key of channel `name`: under the default cache's prefix and version."""
    return caches["default"].make_key(name)


def announce(name: str, token: str, ttl: int = TTL_SECONDS) -> None:
    """Push `token` on channel `name` now; best effort (no channel, or Redis down: the waiter polls anyway)."""
    channel = client()
    if channel is None:
        return
    where = key(name)
    try:
        channel.pipeline().rpush(where, token).expire(where, ttl).execute()
    except Exception as exc:  # noqa: BLE001 - the cache is down: waiters poll
        log.debug("could not announce on %s: %s", name, exc)


def announce_on_commit(name: str, token: str, ttl: int = TTL_SECONDS) -> None:
    """`announce` once the current transaction commits (at once outside one): a waiter woken earlier would read
    what is not committed yet."""
    transaction.on_commit(lambda: announce(name, token, ttl))


def wait(channel: redis.Redis, name: str, timeout: float) -> bytes | None:
    """Block up to `timeout` seconds for a token on channel `name`: the token, or None when none came. Raises when
    Redis fails (the caller polls instead)."""
    woken = channel.blpop([key(name)], timeout=timeout)
    return None if woken is None else woken[1]
