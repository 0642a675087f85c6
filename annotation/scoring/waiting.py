"""Waiting for a verdict without polling the database (issue 27).

The submission request waits up to VERDICT_WAIT_MS for its verdict (`await_verdict`). When the cache is Redis
(CACHE_URL, as in every scale-out deployment), whoever settles the example (verdict stored, failed, or its job
could not be queued) pushes a token on the example's wake-up channel (`dynabench_site.wake`) once its transaction
commits (`announce_settled`), and the request blocks on it (BLPOP, at most a second at a time): no CPU while it
waits, and the answer leaves as soon as the verdict is stored. A stored verdict's token carries the columns it
wrote, so the request answers without reading the row (a cache read, not a database round trip); any other token,
or a second without one, reads the row. Without Redis, or while it is down, the request polls the row instead.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from django.conf import settings

from annotation.models import Example
from dynabench_site import wake


def _channel(example_id: int) -> str:
    return f"example-settled:{example_id}"


def announce_settled(example_id: int, stored: dict[str, Any] | None = None) -> None:
    """Wake a request waiting for this example (`await_verdict`) once the current transaction commits: its
    verdict was stored, it failed, or its scoring job could not be queued. `stored`: the columns the verdict
    just wrote, which the waiter takes instead of reading the row again. Best effort: the waiter reads the row
    at least once a second anyway."""
    token = "1" if stored is None else json.dumps(  # datetimes to the microsecond, as the row holds them
        {name: value.isoformat() if isinstance(value, datetime) else value for name, value in stored.items()})
    wake.announce_on_commit(_channel(example_id), token)


def await_verdict(example: Example, timeout: float, fresh: bool = False) -> Example:
    """Wait up to `timeout` seconds for a worker's verdict (inline jobs have finished already): blocked on the
    example's wake-up channel when the cache is Redis (`announce_settled`), polling the row otherwise.

    With Redis, a stored verdict arrives with its wake-up and is taken as it is: no read of the row. `fresh`: the
    caller has just saved the example (so it knows it is pending) and needs no first read either; a verdict stored
    before the wait began is on the channel already."""
    channel = None if settings.CELERY_TASK_ALWAYS_EAGER else wake.client()
    if not (fresh and channel is not None):
        _reload(example)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return example
    deadline = time.monotonic() + timeout
    name = _channel(example.pk)
    pause = 0.02
    while example.scoring_state == Example.Scoring.PENDING and not example.scoring_delayed:
        remaining = deadline - time.monotonic()
        if remaining < 0.01:
            break
        if channel is not None:
            try:
                token = wake.wait(channel, name, min(remaining, 1.0))
            except Exception:  # noqa: BLE001 - the cache is down: poll the row for the rest of the wait
                channel = None
                continue
            if token is not None and _take(example, token):
                continue
        else:
            time.sleep(min(pause, remaining))
            pause = min(pause * 1.5, 0.25)
        _reload(example)
    return example


def _take(example: Example, token: bytes | str) -> bool:
    """The stored columns a wake-up carried (`announce_settled`), set on the example; False when it carried none
    (a failure, a delay: the row is read)."""
    try:
        stored = json.loads(token)
    except ValueError:
        return False
    if not isinstance(stored, dict) or stored.get("scoring_state") != Example.Scoring.SCORED:
        return False
    try:
        columns = {name: Example._meta.get_field(name).to_python(value) for name, value in stored.items()}
    except Exception:  # noqa: BLE001 - a field this code does not know (another version's worker): read the row
        return False
    for name, value in columns.items():
        setattr(example, name, value)
    return True


def _reload(example: Example) -> None:
    """The row's own columns again (the verdict), keeping the round, context and author the caller already holds:
    `refresh_from_db()` would drop them and the response would read each again."""
    example.refresh_from_db(fields=[f.attname for f in Example._meta.concrete_fields
                                    if not f.is_relation and not f.primary_key])
