"""This part's rows of the site's permission matrix (tests/site/test_permission_matrix.py: PART_MATRICES): the arms
comparison (rounds.arms).

`build(world)` adds what the rows act on and returns it (kept as `world.parts[<this module's short name>]`);
`rows(m)` returns the rows, built with the matrix's `Row`, `expect` and outcome constants passed in as `m`.

Who: researchers, the task's owners and admins (an interim comparison of the arms is not shown to the participants
while they work); everyone else signed in is refused (403), the signed out are asked to log in. A bad `round`
answers 400 past the permissions. The dashboard page itself keeps its row (everyone who sees the task); its arms
section is shown to the same three personas only (tests/rounds/test_arms_comparison.py).
"""

from __future__ import annotations

from typing import Any


def build(world: Any) -> Any:
    from study.models import Arm

    task = world.task
    loop = Arm.objects.create(task=task, key="matrix-loop", name="Model in the loop", position=0)
    Arm.objects.create(task=task, key="matrix-standard", name="Standard", model_in_loop=False, position=1)
    return {"arm": loop.pk}


def rows(m: Any) -> list:
    Row, expect, p = m.Row, m.expect, m.p
    researchers = expect(m.DENY, only=("researcher", "owner", "admin"))
    bad_round = expect(m.DENY, researcher=m.BAD, owner=m.BAD, admin=m.BAD)
    return [
        Row("api/tasks/<slug:slug>/arms/comparison/", "GET", p("/api/tasks/sentiment/arms/comparison/"), researchers),
        Row("api/tasks/<slug:slug>/arms/comparison/", "GET", p("/api/tasks/sentiment/arms/comparison/?round=1"),
            researchers, note="(one round)"),
        Row("api/tasks/<slug:slug>/arms/comparison/", "GET", p("/api/tasks/sentiment/arms/comparison/?round=x"),
            bad_round, note="(a bad round: 400 past the permissions)"),
    ]
