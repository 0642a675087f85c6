"""This part's rows of the site's permission matrix (tests/site/test_permission_matrix.py: PART_MATRICES): the study's
arms (study.arm_urls, study.arm_api_urls).

`build(world)` adds what the rows act on and returns it (kept as `world.parts["arm_matrix"]`): a public task of its
own, "armed" (the sentiment task's rows must not meet a study), with its study on and two arms, "used" (the annotator
is assigned to it) and "spare" (nobody: deletable). `rows(m)` returns the rows, built with the matrix's `Row`,
`expect` and outcome constants passed in as `m`.

Who: the arms' pages and the arms' API are the task's owners' and admins' (403 for the others who see the task, the
login first for the signed out); `arms/mine/` is any writer's (annotators and fresh sign-ups) and says what their
page does, never the arm. Reading assigns nobody (no GET writes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class ArmWorld:
    task: Any
    used: Any  # the annotator's arm
    spare: Any  # nobody's


def build(world: Any) -> ArmWorld:
    from study.models import Arm, Participant, Study
    from tests.factories import RoundFactory, TaskFactory

    task = TaskFactory(slug="armed", kind="sentiment")
    RoundFactory(task=task, number=1)
    task.owners.add(world.people["owner"])
    Study.objects.create(task=task, enabled=True, seed=1)
    used = Arm.objects.create(task=task, key="used", name="Used", position=0)
    spare = Arm.objects.create(task=task, key="spare", name="Spare", position=1)
    Participant.objects.create(task=task, user=world.people["annotator"], arm=used, sequence=0)
    return ArmWorld(task, used, spare)


def rows(m: Any) -> list:
    Row, p, expect = m.Row, m.p, m.expect
    owners = m.OWNERS
    writers = expect(m.DENY, only=("annotator", "signup"))
    base = "/tasks/armed/console/study/arms"
    api = "/api/tasks/armed/arms"

    def used(suffix: str = "") -> Any:
        return lambda w, u: f"{base}/{w.parts['arm_matrix'].used.pk}/{suffix}"

    def api_arm(which: str) -> Any:
        return lambda w, u: f"{api}/{getattr(w.parts['arm_matrix'], which).pk}/"

    return [
        # --- the owner's pages ---
        Row("tasks/<slug:slug>/console/study/arms/", "GET", p(f"{base}/"), owners),
        Row("tasks/<slug:slug>/console/study/arms/add/", "POST", p(f"{base}/add/"), owners,
            lambda w, u: {"key": "new", "name": "New arm", "weight": "1", "active": "on", "model_in_loop": "on"}),
        Row("tasks/<slug:slug>/console/study/arms/<int:pk>/", "GET", used(), owners),
        Row("tasks/<slug:slug>/console/study/arms/<int:pk>/", "POST", used(), owners,
            lambda w, u: {"name": "Renamed", "weight": "2", "active": "on", "model_in_loop": "on", "assistant": "on"}),
        Row("tasks/<slug:slug>/console/study/arms/<int:pk>/delete/", "POST",
            lambda w, u: f"{base}/{w.parts['arm_matrix'].spare.pk}/delete/", owners),
        # --- the API ---
        Row("api/tasks/<slug:slug>/arms/", "GET", p(f"{api}/"), owners),
        Row("api/tasks/<slug:slug>/arms/", "POST", p(f"{api}/"), owners,
            lambda w, u: {"key": "api-new", "name": "From the API", "model_in_loop": False}, json=True),
        Row("api/tasks/<slug:slug>/arms/mine/", "GET", p(f"{api}/mine/"), writers),
        Row("api/tasks/<slug:slug>/arms/<int:pk>/", "GET", api_arm("used"), owners),
        Row("api/tasks/<slug:slug>/arms/<int:pk>/", "PATCH", api_arm("used"), owners,
            lambda w, u: {"name": "Renamed"}, json=True),
        Row("api/tasks/<slug:slug>/arms/<int:pk>/", "DELETE", api_arm("spare"), owners),
    ]
