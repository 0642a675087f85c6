"""The crowd platform's incoming webhooks (Prolific style): base64(HMAC-SHA256(secret, timestamp + raw body)) in
X-Prolific-Request-Signature, the UNIX time in X-Prolific-Request-Timestamp; signatures computed here as the
platform computes them. A tampered body, another secret, a stale timestamp or missing headers are refused; a
repeated event is answered "already processed" and changes nothing; RETURNED / TIMED-OUT free the place."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest
from django.test import Client

from crowd import lifecycle, links
from crowd.models import Assignment, PlatformEvent
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
SECRET = "prolific-workspace-secret-0123456789"


@pytest.fixture
def batch(crowd_task):
    owner = UserFactory(username="study-owner")
    crowd_task.owners.add(owner)
    batch = links.create_batch(crowd_task, owner, name="wave", source="prolific", hours=24, examples_required=1,
                               workers="", places=2, study_id="STUDY1")
    lifecycle.configure(batch, places=2, time_limit_minutes=None, study_id="STUDY1", completion_url="",
                        screen_out_url="", webhook_secret=SECRET)
    for pid in ("PID1", "PID2"):
        Client().post(lifecycle.open_link_path(batch), {"PROLIFIC_PID": pid, "STUDY_ID": "STUDY1",
                                                        "SESSION_ID": f"SUB-{pid}"})
    batch.refresh_from_db()
    assert lifecycle.places(batch).free == 0
    return batch


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """Prolific's documented recipe, written out here rather than taken from the code under test."""
    return base64.b64encode(hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()).decode()


def event(pid: str, status: str, **extra) -> bytes:
    return json.dumps({"resource_id": f"SUB-{pid}", "event_type": "submission.status.change",
                       "participant_id": pid, "status": status, **extra}).encode()


def deliver(batch, body: bytes, *, secret: str = SECRET, timestamp: str | None = None, sig: str | None = None,
            headers: bool = True, path: str | None = None):
    timestamp = timestamp if timestamp is not None else str(int(time.time()))
    extra = {"HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": timestamp,
             "HTTP_X_PROLIFIC_REQUEST_SIGNATURE": sig if sig is not None else signature(secret, timestamp, body)}
    return Client(enforce_csrf_checks=True).post(path or f"/crowd/webhooks/{batch.pk}/", data=body,
                                                 content_type="application/json", **(extra if headers else {}))


def test_a_signed_returned_event_frees_the_place(batch):
    response = deliver(batch, event("PID1", "RETURNED"))
    assert response.status_code == 200, response.content
    assert response.json() == {"processed": True, "detail": "returned: place freed"}
    assignment = Assignment.objects.get(batch=batch, worker_id="PID1")
    assert (assignment.state, assignment.platform_status) == ("returned", "RETURNED")
    assert lifecycle.places(batch).free == 1
    taken = Client().post(lifecycle.open_link_path(batch), {"PROLIFIC_PID": "PID3", "STUDY_ID": "STUDY1"})
    assert taken.status_code == 302  # the next participant takes the freed place


def test_a_timed_out_event_frees_the_place_and_review_states_are_recorded(batch):
    assert deliver(batch, event("PID2", "TIMED-OUT")).json()["detail"] == "timed out: place freed"
    assert Assignment.objects.get(worker_id="PID2").state == "timed_out"
    for status in ("AWAITING REVIEW", "APPROVED"):
        assert deliver(batch, event("PID1", status)).status_code == 200
    pid1 = Assignment.objects.get(worker_id="PID1")
    assert (pid1.state, pid1.platform_status) == ("active", "APPROVED")  # recorded, holds its place
    assert deliver(batch, event("PID1", "REJECTED")).json()["detail"] == "recorded (rejected)"
    assert lifecycle.places(batch).free == 1


def test_a_repeated_event_is_processed_once(batch):
    body = event("PID1", "RETURNED")
    assert deliver(batch, body).json()["processed"] is True
    again = deliver(batch, body)  # the platform retries: same event, fresh timestamp and signature
    assert again.status_code == 200 and again.json() == {"processed": False, "detail": "already processed"}
    assert PlatformEvent.objects.filter(batch=batch).count() == 1
    with_ids = [event("PID2", "AWAITING REVIEW", event_id="evt-1"), event("PID2", "RETURNED", event_id="evt-1")]
    assert deliver(batch, with_ids[0]).json()["processed"] is True
    assert deliver(batch, with_ids[1]).json()["processed"] is False  # an explicit event id is the key
    assert Assignment.objects.get(worker_id="PID2").state == "active"


def test_a_tampered_body_or_another_secret_is_refused(batch):
    timestamp = str(int(time.time()))
    body = event("PID1", "RETURNED")
    signed = signature(SECRET, timestamp, body)
    tampered = deliver(batch, event("PID2", "RETURNED"), timestamp=timestamp, sig=signed)
    assert tampered.status_code == 403 and tampered.json()["code"] == "signature_invalid"
    assert b"does not match" in tampered.content
    other = deliver(batch, body, secret="someone-elses-secret-000000")
    assert other.status_code == 403
    moved = deliver(batch, body, timestamp=str(int(timestamp) + 1), sig=signed)  # the timestamp is signed too
    assert moved.status_code == 403
    assert not PlatformEvent.objects.exists()
    assert set(Assignment.objects.values_list("state", flat=True)) == {"active"}


def test_a_stale_or_future_timestamp_is_refused(batch, settings):
    settings.CROWD_WEBHOOK_TOLERANCE_SECONDS = 300
    body = event("PID1", "RETURNED")
    for skew in (-301, 301):
        response = deliver(batch, body, timestamp=str(int(time.time()) + skew))
        assert response.status_code == 403 and response.json()["code"] == "timestamp_stale", skew
    assert deliver(batch, body, timestamp="yesterday").json()["code"] == "timestamp_invalid"
    assert deliver(batch, body, timestamp=str(int(time.time()) - 290)).status_code == 200


def test_an_unsigned_request_is_refused_with_401(batch):
    response = deliver(batch, event("PID1", "RETURNED"), headers=False)
    assert response.status_code == 401 and b"X-Prolific-Request-Signature" in response.content
    assert Client().get(f"/crowd/webhooks/{batch.pk}/").status_code == 405
    assert deliver(batch, event("PID1", "RETURNED"), path="/crowd/webhooks/999999/").status_code == 404


def test_a_malformed_body_is_refused_with_400(batch):
    for body in (b"{not json", b"[1, 2]", json.dumps({"status": "RETURNED"}).encode(), b"\xff\xfe",
                 json.dumps({"event_type": "submission.status.change", "participant_id": "PID1"}).encode(),
                 json.dumps({"event_type": "submission.status.change", "participant_id": ["PID1"],
                             "status": "RETURNED"}).encode()):
        response = deliver(batch, body)
        assert response.status_code == 400, body
        assert response.json()["detail"]
    assert set(Assignment.objects.values_list("state", flat=True)) == {"active"}


def test_other_events_and_unknown_participants_are_recorded_and_answered(batch):
    study = json.dumps({"resource_id": "STUDY1", "event_type": "study.status.change", "status": "COMPLETED",
                        "metadata": {}}).encode()
    assert deliver(batch, study).json() == {"processed": True, "detail": "recorded (nothing to do here)"}
    assert deliver(batch, study).json()["processed"] is False
    stranger = deliver(batch, event("NOBODY", "RETURNED")).json()
    assert stranger["detail"] == "no assignment for this participant here"
    assert lifecycle.places(batch).free == 0


def test_each_batch_checks_its_own_secret(batch, crowd_task):
    other = links.create_batch(crowd_task, None, name="other", source="prolific", hours=1, examples_required=1,
                               workers="PID1,X1")
    response = deliver(other, event("PID1", "RETURNED"))  # signed with the first batch's secret
    assert response.status_code == 403
    assert deliver(other, event("PID1", "RETURNED"), secret=other.webhook_secret).status_code == 200
    assert Assignment.objects.get(batch=batch, worker_id="PID1").state == "active"
    assert Assignment.objects.get(batch=other, worker_id="PID1").state == "returned"
