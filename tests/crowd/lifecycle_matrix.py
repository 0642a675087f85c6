"""This part's rows of the site's permission matrix (tests/site/test_permission_matrix.py: PART_MATRICES).

`build(world)` adds what the rows act on and returns it (kept as `world.parts[<this module's short name>]`);
`rows(m)` returns the rows, built with the matrix's `Row`, `expect` and outcome constants passed in as `m`.

The crowd platform's lifecycle (crowd.lifecycle, crowd.platform):
- the open study link is everyone's (it is pasted into the platform; GET only shows it, POST takes a place);
- an assignment's completion redirect and its way out (leave) are the worker's own: 404 for anyone else;
- the platform's webhook is public but signed: without a valid signature everyone gets 401 (LOGIN);
- a batch's platform settings are its task's owners'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crowd import lifecycle, links
from crowd.models import Assignment, WorkerBatch


@dataclass
class LifecycleWorld:
    batch: WorkerBatch  # an open batch with free places
    assignment: Assignment  # the annotator's, active (as if they came by the open link)


def build(world: Any) -> LifecycleWorld:
    batch = links.create_batch(world.task, world.people["owner"], name="open wave", source="prolific", hours=48,
                               examples_required=1, workers="", places=3, study_id="STUDY1")
    assignment = Assignment.objects.create(batch=batch, worker_id="ANNOTATOR-PID", assignment_id="SUB-1",
                                           user=world.people["annotator"], completion_code=links.new_code(),
                                           followed_at=batch.created_at, state=Assignment.State.ACTIVE,
                                           via_open_link=True, submission_id="SUB-1")
    return LifecycleWorld(batch, assignment)


def part(w: Any) -> LifecycleWorld:
    return w.parts["lifecycle_matrix"]


def open_link(w: Any, user: Any) -> str:
    return f"{lifecycle.open_link_path(part(w).batch)}?PROLIFIC_PID=NEWPID&STUDY_ID=STUDY1&SESSION_ID=SUB-9"


def assignment_path(suffix: str):
    return lambda w, u: f"/assignments/{part(w).assignment.pk}/{suffix}"


def rows(m: Any) -> list:
    Row, expect = m.Row, m.expect
    worker_only = expect(m.HIDDEN, only=("annotator",))
    return [
        Row("join/<str:token>/", "GET", open_link, m.EVERYONE, note="(shows the study; takes nothing)"),
        Row("join/<str:token>/", "POST", open_link, m.EVERYONE, note="(takes a free place, signs in as the worker)"),
        Row("assignments/<int:pk>/complete/", "GET", assignment_path("complete/"), worker_only,
            note="(the worker's own only)"),
        Row("assignments/<int:pk>/leave/", "GET", assignment_path("leave/?reason=declined"), worker_only),
        Row("assignments/<int:pk>/leave/", "POST", assignment_path("leave/"), worker_only,
            lambda w, u: {"reason": "declined"}),
        Row("crowd/webhooks/<int:pk>/", "POST", lambda w, u: f"/crowd/webhooks/{part(w).batch.pk}/",
            expect(m.LOGIN, anonymous=m.LOGIN),
            lambda w, u: {"event_type": "submission.status.change", "participant_id": "ANNOTATOR-PID",
                          "status": "RETURNED"},
            json=True, note="(public, signed: 401 without the platform's signature)"),
        Row("console/batches/<int:pk>/platform/", "POST", lambda w, u: f"/console/batches/{part(w).batch.pk}/platform/",
            m.OWNERS, lambda w, u: {"places": 4, "study_id": "STUDY1", "time_limit_minutes": 60}),
    ]
