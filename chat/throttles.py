"""How fast a writer may ask the models of a chat task: every message, retried answer and new conversation costs
model time, so each counts against the task's `submission_rate` ("30/min"), per writer and task.

Counted by the site's rate limiter (dynabench_site.throttles): over the limit the answer is 429 with Retry-After
and nothing is stored; a cache outage lets the request through.
"""

from __future__ import annotations

from rest_framework import exceptions

from dynabench_site import throttles

SCOPE = "chat"
MESSAGE = "You are asking the models faster than this task allows ({rate}); try again in {wait}."


def check(user, task) -> None:
    """Count one request of `user` that makes `task`'s models write; raise Throttled (429) over the task's rate."""
    rate = task.typed_config.submission_rate
    wait = throttles.hit(SCOPE, [f"{task.slug}:user:{user.pk}"], rate)
    if wait is not None:
        raise exceptions.Throttled(wait=wait, detail=MESSAGE.format(rate=rate, wait=throttles.wait_text(wait)))
