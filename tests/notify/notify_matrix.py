"""This part's rows of the site's permission matrix (tests/site/test_permission_matrix.py: PART_MATRICES).

`build(world)` adds what the rows act on and returns it (kept as `world.parts[<this module's short name>]`);
`rows(m)` returns the rows, built with the matrix's `Row`, `expect` and outcome constants passed in as `m`.

Who: the notifications console (webhooks, their delivery log, mails) is the task's owners' and admins' (403 for
anyone else who sees the task; 404 where the task is hidden from them, as for every console page). A webhook of
another task is 404 under this task's address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from notify.models import Webhook


@dataclass
class NotifyWorld:
    hook: Webhook  # the sentiment task's
    hidden_hook: Webhook  # the hidden task's


def build(world: Any) -> NotifyWorld:
    def hook(task) -> Webhook:
        return Webhook.objects.create(task=task, url="https://hooks.example.org/in", events=["round_closed"],
                                      secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")

    return NotifyWorld(hook(world.task), hook(world.hidden))


def rows(m: Any) -> list:
    Row, expect, p = m.Row, m.expect, m.p
    owners = m.OWNERS
    hidden = expect(m.HIDDEN, only=("owner", "admin"))
    base = "/tasks/sentiment/console/notifications/"
    hook = base + "webhooks/{w.parts[notify_matrix].hook.pk}/"
    hidden_base = "/tasks/hidden/console/notifications/"
    hidden_hook = hidden_base + "webhooks/{w.parts[notify_matrix].hidden_hook.pk}/"
    other_hook = base + "webhooks/{w.parts[notify_matrix].hidden_hook.pk}/"
    add = lambda w, u: {"url": "https://hooks.example.org/new", "events": ["round_opened", "round_closed"]}  # noqa: E731
    console = "tasks/<slug:slug>/console/notifications/"
    log = console + "webhooks/<int:pk>/"
    return [
        Row(console, "GET", p(base), owners),
        Row(console, "GET", p(hidden_base), hidden, note="hidden"),
        Row(console, "POST", p(base), owners, add, note="(adds a webhook: its secret shown once)"),
        Row(console, "POST", p(hidden_base), hidden, add, note="hidden"),
        Row(log, "GET", p(hook), owners),
        Row(log, "GET", p(hidden_hook), hidden, note="hidden"),
        Row(log, "GET", p(other_hook), expect(m.DENY, owner=m.HIDDEN, admin=m.HIDDEN),
            note="(another task's webhook)"),
        Row(log + "enable/", "POST", p(hook + "enable/"), owners),
        Row(log + "enable/", "POST", p(hidden_hook + "enable/"), hidden, note="hidden"),
        Row(log + "delete/", "POST", p(hook + "delete/"), owners),
        Row(log + "delete/", "POST", p(hidden_hook + "delete/"), hidden, note="hidden"),
        Row(log + "test/", "POST", p(hook + "test/"), owners),
        Row(log + "test/", "POST", p(hidden_hook + "test/"), hidden, note="hidden"),
    ]
