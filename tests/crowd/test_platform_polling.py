"""The polling fallback against a real local HTTP server standing in for the crowd platform's API (http.server in
a thread on 127.0.0.1): it serves a study's submissions page by page and records every request. The same state
changes as the webhooks, applied once; a platform that fails or hangs is logged, kept on the batch, and tried
again at the next sweep, never raised into the job."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client

from crowd import jobs, lifecycle, links, platform
from crowd.models import Assignment, PlatformEvent
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
TOKEN = "platform-api-token"


class FakePlatform:
    """Prolific's GET /api/v1/studies/<id>/submissions/: `submissions[study]` in pages of `page_size`."""

    def __init__(self):
        self.submissions: dict[str, list[dict]] = {}
        self.requests: list[dict] = []
        self.status = 200
        self.delay = 0.0
        self.page_size = 2
        self.next_host: str | None = None
        platform_ = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                platform_.requests.append({"path": self.path, "authorization": self.headers.get("Authorization")})
                time.sleep(platform_.delay)
                path, _, query = self.path.partition("?")
                parts = path.strip("/").split("/")
                if platform_.status != 200 or len(parts) != 5 or parts[:3] != ["api", "v1", "studies"]:
                    return self.answer(platform_.status if platform_.status != 200 else 404, {"error": "no"})
                if self.headers.get("Authorization") != f"Token {TOKEN}":
                    return self.answer(401, {"error": {"detail": "Invalid token."}})
                rows = platform_.submissions.get(parts[3], [])
                page = int(query.removeprefix("page=") or 1) if query.startswith("page=") else 1
                size = platform_.page_size
                body = {"results": rows[(page - 1) * size: page * size], "_links": {"next": {"href": None}}}
                if page * size < len(rows):
                    host = platform_.next_host or ""
                    body["_links"]["next"]["href"] = f"{host}{path}?page={page + 1}"
                return self.answer(200, body)

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_platform(settings):
    server = FakePlatform()
    settings.CROWD_PLATFORM_API_URL = server.url
    settings.CROWD_PLATFORM_API_TOKEN = TOKEN
    yield server
    server.close()


@pytest.fixture
def batch(crowd_task):
    owner = UserFactory(username="study-owner")
    crowd_task.owners.add(owner)
    batch = links.create_batch(crowd_task, owner, name="wave", source="prolific", hours=24, examples_required=1,
                               workers="", places=3, study_id="STUDY1")
    for pid in ("PID1", "PID2", "PID3"):
        Client().post(lifecycle.open_link_path(batch), {"PROLIFIC_PID": pid, "STUDY_ID": "STUDY1",
                                                        "SESSION_ID": f"SUB-{pid}"})
    assert lifecycle.places(batch).free == 0
    return batch


def submission(pid: str, status: str) -> dict:
    return {"id": f"SUB-{pid}", "participant_id": pid, "study_id": "STUDY1", "status": status,
            "started_at": "2026-12-07T10:00:00Z"}


def states(batch) -> dict[str, str]:
    return dict(Assignment.objects.filter(batch=batch).values_list("worker_id", "state"))


def test_polling_applies_returned_and_timed_out_and_frees_places(fake_platform, batch):
    fake_platform.submissions["STUDY1"] = [submission("PID1", "RETURNED"), submission("PID2", "TIMED-OUT"),
                                           submission("PID3", "ACTIVE"), submission("STRANGER", "APPROVED")]
    result = platform.poll(batch)
    assert result.ok and result.seen == 4 and result.changed == 4
    assert states(batch) == {"PID1": "returned", "PID2": "timed_out", "PID3": "active"}
    assert lifecycle.places(batch).free == 2
    assert [r["path"] for r in fake_platform.requests] == ["/api/v1/studies/STUDY1/submissions/",
                                                           "/api/v1/studies/STUDY1/submissions/?page=2"]
    assert {r["authorization"] for r in fake_platform.requests} == {f"Token {TOKEN}"}
    batch.refresh_from_db()
    assert batch.polled_at is not None and batch.poll_error == ""


def test_polling_again_changes_nothing_and_the_webhook_after_it_is_already_processed(fake_platform, batch):
    from tests.crowd.test_platform_webhooks import deliver, event

    fake_platform.submissions["STUDY1"] = [submission("PID1", "RETURNED")]
    assert platform.poll(batch).changed == 1
    assert platform.poll(batch).changed == 0
    assert PlatformEvent.objects.filter(batch=batch).count() == 1
    late = deliver(batch, event("PID1", "RETURNED"), secret=batch.webhook_secret)
    assert late.json() == {"processed": False, "detail": "already processed"}
    fake_platform.submissions["STUDY1"] = [submission("PID1", "RETURNED"), submission("PID2", "AWAITING REVIEW")]
    assert platform.poll(batch).changed == 1
    assert Assignment.objects.get(batch=batch, worker_id="PID2").platform_status == "AWAITING REVIEW"


def test_the_sweep_job_polls_and_a_failing_platform_is_tried_again_next_time(fake_platform, batch):
    fake_platform.submissions["STUDY1"] = [submission("PID1", "RETURNED")]
    fake_platform.status = 503
    result = jobs.lifecycle_sweep()
    assert result == {"timed_out": 0, "polled": 1, "changed": 0, "failed": 1}
    batch.refresh_from_db()
    assert batch.poll_error == "the platform's API answered 503" and states(batch)["PID1"] == "active"
    fake_platform.status = 200
    assert jobs.lifecycle_sweep() == {"timed_out": 0, "polled": 1, "changed": 1, "failed": 0}
    batch.refresh_from_db()
    assert batch.poll_error == "" and states(batch)["PID1"] == "returned"


def test_a_platform_that_hangs_times_out_and_a_wrong_token_is_an_error(fake_platform, batch, monkeypatch, settings):
    monkeypatch.setattr(platform, "POLL_TIMEOUT_SECONDS", 0.3)
    fake_platform.delay = 1.0
    result = platform.poll(batch)
    assert not result.ok and "did not answer" in result.error  # the 0.3 s timeout, not the server's 1 s answer
    fake_platform.delay = 0
    settings.CROWD_PLATFORM_API_TOKEN = "wrong"
    assert platform.poll(batch).error == "the platform's API answered 401"


def test_the_token_never_goes_to_another_host(fake_platform, batch):
    fake_platform.submissions["STUDY1"] = [submission(p, "ACTIVE") for p in ("PID1", "PID2", "PID3")]
    fake_platform.next_host = "http://203.0.113.9"
    result = platform.poll(batch)
    assert not result.ok and "another host" in result.error
    assert len(fake_platform.requests) == 1


def test_batches_without_a_study_id_or_without_an_api_are_not_polled(fake_platform, batch, crowd_task, settings):
    links.create_batch(crowd_task, None, name="listed", source="prolific", hours=1, examples_required=1,
                       workers="W1,A1")
    assert jobs.lifecycle_sweep()["polled"] == 1  # the batch with a study id only
    settings.CROWD_PLATFORM_API_URL = ""
    assert platform.poll(batch).ok and len(fake_platform.requests) == 1
