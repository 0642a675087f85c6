"""Where a person who stops goes back to: a provider hook, so the study never imports the apps above it.

The crowd platform's helper registers its provider from `crowd/apps.py` (`exits.provide(fn)`): `fn(user, task,
reason)` answers the address to send the person back to (the crowd platform's return URL for a worker who came from
a signed link), or None. `reason` is one of REASONS. The study's stop pages (declined consent, ineligible, withdrawn)
offer the link when there is one. Without a provider, or when every provider answers None, there is no link.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

DECLINED, INELIGIBLE, WITHDRAWN, FINISHED = "declined", "ineligible", "withdrawn", "finished"
REASONS = (DECLINED, INELIGIBLE, WITHDRAWN, FINISHED)

Provider = Callable[[Any, Any, str], "str | None"]
_providers: list[Provider] = []


def provide(fn: Provider) -> Provider:
    """Register `fn` (once; registering it again is a no-op). Usable as a decorator."""
    if fn not in _providers:
        _providers.append(fn)
    return fn


def forget(fn: Provider) -> None:
    """Unregister `fn` (tests)."""
    if fn in _providers:
        _providers.remove(fn)


def return_url(user, task, reason: str) -> str | None:
    """The first address a provider answers for this person leaving `task` for `reason`, else None. A provider that
    fails is logged and skipped: a stop page never breaks for want of a link."""
    if reason not in REASONS:
        raise ValueError(f"unknown exit reason {reason!r}; one of {', '.join(REASONS)}")
    if not getattr(user, "is_authenticated", False):
        return None
    for fn in list(_providers):
        try:
            url = fn(user, task, reason)
        except Exception:  # noqa: BLE001 - a provider's failure must not break the page
            log.exception("exit provider %r failed", fn)
            continue
        if url:
            return url
    return None
