"""The prediction-upload routes' part of the site's permission matrix (tests/site/test_permission_matrix.py).

`build(world)` adds what the rows act on (returned, stored as `world.predictions`: the researcher's scored
prediction upload on the sentiment task); `rows(m)` returns the rows, built with the matrix's `Row`, `expect` and
outcome constants passed in as `m` (no import cycle).

Who: the people who may upload a model (researchers, the task's owners, admins) upload predictions and read the test
rows without labels; an upload's report is its uploader's and the task's owners' and admins' (404 for anyone else).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rounds.models import PredictionScore, PredictionUpload


@dataclass
class PredictionWorld:
    upload: PredictionUpload  # the researcher's, scored on the base test set


def build(world: Any) -> PredictionWorld:
    upload = PredictionUpload.objects.create(
        task=world.task, uploaded_by=world.people["researcher"], name="by hand", filename="preds.jsonl", rows=2,
        accepted=1, status=PredictionUpload.Status.SCORED,
        report={"errors": [{"line": 2, "id": "item-0", "field": "id", "code": "unknown_id", "message": "no row"}],
                "error_count": 1, "by_code": {"unknown_id": 1}, "truncated": False})
    PredictionScore.objects.create(upload=upload, dataset="*/test", size=1, covered=1,
                                   status=PredictionScore.Status.SCORED, metrics={"accuracy": 1.0})
    return PredictionWorld(upload)


def rows(m: Any) -> list:
    Row, expect, p = m.Row, m.expect, m.p
    researchers = expect(m.DENY, only=("researcher", "owner", "admin"))
    past_permissions = expect(m.DENY, researcher=m.ALLOWED, owner=m.ALLOWED, admin=m.ALLOWED)
    uploader_or_owners = expect(m.HIDDEN, only=("researcher", "owner", "admin"))
    return [
        # --- pages ---------------------------------------------------------------------------------------
        Row("tasks/<slug:slug>/predictions/upload/", "GET", p("/tasks/sentiment/predictions/upload/"), researchers),
        Row("tasks/<slug:slug>/predictions/upload/", "POST", p("/tasks/sentiment/predictions/upload/"),
            past_permissions, lambda w, u: {"name": "mine"}, note="(no file: the form again, 400)"),
        Row("tasks/<slug:slug>/predictions/inputs/", "GET", p("/tasks/sentiment/predictions/inputs/"), researchers),
        Row("predictions/<int:pk>/", "GET", p("/predictions/{w.predictions.upload.pk}/"), uploader_or_owners),
        # --- API -----------------------------------------------------------------------------------------
        Row("api/tasks/<slug:slug>/predictions/", "GET", p("/api/tasks/sentiment/predictions/"), researchers),
        Row("api/tasks/<slug:slug>/predictions/", "POST", p("/api/tasks/sentiment/predictions/"), past_permissions,
            lambda w, u: {"name": "mine"}, note="(no file: 400 past the permissions)"),
        Row("api/tasks/<slug:slug>/predictions/test-sets/", "GET", p("/api/tasks/sentiment/predictions/test-sets/"),
            researchers),
        Row("api/predictions/<int:pk>/", "GET", p("/api/predictions/{w.predictions.upload.pk}/"), uploader_or_owners),
    ]
