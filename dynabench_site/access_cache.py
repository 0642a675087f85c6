"""A short-lived cache for what every authenticated request reads before doing its own work (issue 27).

On every request, before any of its own work, the writer's path used to read from the database:
- the API token and its user;
- the user's roles, grants, suspensions and owned tasks;
- the task and its open round;
- whether the user acknowledged the task's current guidelines.

The apps that own those rows (accounts.tokens, tasks.access) now keep them in Django's cache, under keys built with
`key()`, for at most ACCESS_CACHE_SECONDS (0 turns the cache off).

**Correctness comes from invalidation, not from the timeout.** Each entry stores the *access generation* it was
read at. Any write to an owning row replaces the generation (`bump`), so every entry read earlier is stale from
that moment on. The owning apps connect `bump` to their models' saves, deletes and many-to-many changes. The few
queryset `.update()` calls on those rows call `bump` themselves. An entry and the current generation come in one
cache read (`lookup`).

A cache that is down costs the database reads, never a request: `lookup` answers MISSING and `put` does nothing.
The guarantee holds as far as the cache is shared. Where several processes serve requests they must share it
(CACHE_URL: Redis, as in the production deployment). The embedded default serves from one process. A change made
by another process on a machine without a shared cache (a management command beside `make run`) shows within
ACCESS_CACHE_SECONDS.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

GENERATION = "access:generation"
MISSING = object()


def enabled() -> bool:
    return settings.ACCESS_CACHE_SECONDS > 0


def key(*parts: object) -> str:
    return "access:" + ":".join(str(p) for p in parts)


def bump(*_args: Any, **_kwargs: Any) -> None:
    """A new generation: every entry cached before now is stale. Called again when the writing transaction commits,
    so that nothing read between the write and its commit (the old rows, tagged with the new generation) survives.
    A signal receiver, hence the ignored arguments."""
    _new_generation()
    transaction.on_commit(_new_generation)


def _new_generation() -> None:
    # The cache is down: nothing can be read from it either; when it is back, entries older than this write live
    # at most ACCESS_CACHE_SECONDS more.
    with contextlib.suppress(Exception):
        cache.set(GENERATION, uuid.uuid4().hex, None)


def lookup(name: str) -> tuple[Any, str | None]:
    """(the value cached under `name` at the current generation, or MISSING; the current generation). Read the
    generation before the rows a new entry is made of, and hand it to `put`: a write in between then makes the
    new entry stale at once instead of caching the old rows under the new generation."""
    if not enabled():
        return MISSING, None
    try:
        found = cache.get_many([GENERATION, name])
        generation = found.get(GENERATION)
        if generation is None:
            generation = uuid.uuid4().hex
            if not cache.add(GENERATION, generation, None):
                generation = cache.get(GENERATION)
    except Exception:  # noqa: BLE001 - the cache is down: read the database, cache nothing
        return MISSING, None
    entry = found.get(name)
    if entry is None or entry[0] != generation:
        return MISSING, generation
    return entry[1], generation


def put(name: str, value: Any, generation: str | None) -> None:
    """Cache `value` under `name`, tagged with the generation `lookup` gave before the value was read."""
    if enabled() and generation is not None:
        with contextlib.suppress(Exception):  # the cache is down: the next request reads the database again
            cache.set(name, (generation, value), settings.ACCESS_CACHE_SECONDS)
