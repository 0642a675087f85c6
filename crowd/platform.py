"""The crowd platform talking to this site: its incoming webhooks (verified) and the polling fallback.

Webhooks (Prolific style, https://docs.prolific.com/api-reference/webhooks/verifying): POST
/crowd/webhooks/<batch id>/ with the headers X-Prolific-Request-Timestamp (UNIX seconds) and
X-Prolific-Request-Signature = base64(HMAC-SHA256(batch secret, timestamp + raw body)). `receive` checks, in
this order: the batch exists (404), both headers are there (401), the timestamp is a number within
settings.CROWD_WEBHOOK_TOLERANCE_SECONDS of now (403 "stale"), the signature matches, compared in constant time
(403), the body is a JSON object with an event_type (400); then the event is applied once per event id (a
repeated delivery answers 200 "already processed").

Polling (https://docs.prolific.com/api-reference/studies/get-study-submissions): GET
<CROWD_PLATFORM_API_URL>/api/v1/studies/<study id>/submissions/ with "Authorization: Token <token>", following
`_links.next.href` on the same host; every submission's status goes through the same
`lifecycle.apply_submission_status`, so a change seen by both the webhook and the polling is applied once. A
failure (network, status, body) is logged and kept on the batch (`poll_error`); the next sweep tries again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urljoin, urlsplit

import requests
from django.conf import settings
from django.utils import timezone

from crowd import lifecycle
from crowd.models import PlatformEvent, WorkerBatch

log = logging.getLogger(__name__)

TIMESTAMP_HEADER = "X-Prolific-Request-Timestamp"
SIGNATURE_HEADER = "X-Prolific-Request-Signature"
SUBMISSION_EVENT = "submission.status.change"
POLL_TIMEOUT_SECONDS = 10  # each request to the platform's API (a module constant: no setting of its own yet)
POLL_MAX_PAGES = 50  # 50 pages of the platform's default size: the largest studies
SUBMISSIONS_PATH = "/api/v1/studies/{study}/submissions/"


# --- signatures ---------------------------------------------------------------------------------------


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """base64(HMAC-SHA256(secret, timestamp + body)): what the platform sends, and what tests send."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict


def refused(status: int, code: str, detail: str) -> Answer:
    return Answer(status, {"detail": detail, "code": code})


def verify(batch: WorkerBatch, headers, body: bytes, now: float | None = None) -> Answer | None:
    """None when the request is the platform's, signed with the batch's secret and fresh; else the refusal."""
    timestamp = (headers.get(TIMESTAMP_HEADER) or "").strip()
    signature = (headers.get(SIGNATURE_HEADER) or "").strip()
    if not timestamp or not signature:
        return refused(401, "signature_missing", f"Unsigned request: the {TIMESTAMP_HEADER} and {SIGNATURE_HEADER} "
                       "headers are required (signed with the batch's webhook secret).")
    try:
        sent = int(timestamp)
    except ValueError:
        return refused(403, "timestamp_invalid", f"{TIMESTAMP_HEADER} must be a UNIX time in seconds.")
    now = time.time() if now is None else now
    tolerance = settings.CROWD_WEBHOOK_TOLERANCE_SECONDS
    if abs(now - sent) > tolerance:
        return refused(403, "timestamp_stale", f"The request's timestamp is more than {tolerance} seconds from this "
                       "server's clock: refused as a possible replay (check the clocks, or send it again).")
    expected = sign(batch.webhook_secret, timestamp, body)
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        return refused(403, "signature_invalid", "The signature does not match the body and timestamp signed with "
                       "this batch's webhook secret (a changed body, or another secret).")
    return None


# --- incoming webhooks ----------------------------------------------------------------------------------


def receive(batch_id: int, headers, body: bytes, now: float | None = None) -> Answer:
    """One webhook delivery: verified, parsed, applied once."""
    batch = WorkerBatch.objects.filter(pk=batch_id).first()
    if batch is None:
        return refused(404, "not_found", "No such batch.")
    refusal = verify(batch, headers, body, now)
    if refusal is not None:
        log.warning("crowd webhook for batch %s refused: %s", batch_id, refusal.body["code"])
        return refusal
    try:
        event = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return refused(400, "invalid", "The body is not JSON.")
    if not isinstance(event, dict) or not isinstance(event.get("event_type"), str) or not event["event_type"]:
        return refused(400, "invalid", "The body must be a JSON object with an event_type.")
    event_type = event["event_type"].strip()
    fields = {k: event.get(k) for k in ("resource_id", "participant_id", "status", "event_id", "id")}
    if any(v is not None and not isinstance(v, (str, int)) for v in fields.values()):
        return refused(400, "invalid", "resource_id, participant_id, status and event_id must be strings.")
    text = {k: str(v).strip() if v is not None else "" for k, v in fields.items()}
    given_id = text["event_id"] or text["id"]
    if event_type == SUBMISSION_EVENT:
        if not text["status"] or not (text["participant_id"] or text["resource_id"]):
            return refused(400, "invalid", "A submission.status.change needs a status and a participant_id or "
                           "resource_id.")
        applied = lifecycle.apply_submission_status(
            batch, participant_id=text["participant_id"], submission_id=text["resource_id"], status=text["status"],
            channel=PlatformEvent.Channel.WEBHOOK, event_id=given_id or None, event_type=event_type)
    else:  # study.status.change and others: recorded once, nothing to do here
        applied = record_other(batch, event_type, given_id or f"{event_type}:{text['resource_id']}:{text['status']}",
                               text["status"])
    return Answer(200, {"processed": applied.processed, "detail": applied.outcome})


def record_other(batch: WorkerBatch, event_type: str, event_id: str, status: str) -> lifecycle.Applied:
    from django.db import IntegrityError, transaction

    try:
        with transaction.atomic():
            PlatformEvent.objects.create(batch=batch, event_id=event_id[:200], event_type=event_type[:60],
                                         channel=PlatformEvent.Channel.WEBHOOK, status=status[:40],
                                         outcome="recorded (nothing to do here)")
    except IntegrityError:
        return lifecycle.Applied(False, "already processed")
    return lifecycle.Applied(True, "recorded (nothing to do here)")


# --- polling --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PollResult:
    ok: bool
    seen: int = 0
    changed: int = 0
    error: str = ""


class PollError(Exception):
    pass


def fetch_submissions(study_id: str, *, base_url: str, token: str, timeout: float | None = None) -> list[dict]:
    """Every submission of the study, page by page (PollError on any failure; each request waits at most
    `timeout`, POLL_TIMEOUT_SECONDS by default)."""
    timeout = timeout or POLL_TIMEOUT_SECONDS
    url = urljoin(base_url.rstrip("/") + "/", SUBMISSIONS_PATH.format(study=study_id).lstrip("/"))
    origin = urlsplit(url)[:2]
    rows: list[dict] = []
    for _ in range(POLL_MAX_PAGES):
        try:
            response = requests.get(url, headers={"Authorization": f"Token {token}", "Accept": "application/json"},
                                    timeout=timeout, allow_redirects=False)
        except requests.RequestException as exc:
            raise PollError(f"the platform's API did not answer: {exc.__class__.__name__}") from exc
        if response.status_code != 200:
            raise PollError(f"the platform's API answered {response.status_code}")
        try:
            page = response.json()
        except ValueError:
            raise PollError("the platform's API answered something that is not JSON") from None
        results = page.get("results") if isinstance(page, dict) else None
        if not isinstance(results, list):
            raise PollError("the platform's answer has no list of results")
        rows.extend(r for r in results if isinstance(r, dict))
        following = ((page.get("_links") or {}).get("next") or {}) if isinstance(page.get("_links"), dict) else {}
        following = following.get("href") if isinstance(following, dict) else following
        if not following or not isinstance(following, str):
            return rows
        url = urljoin(url, following)
        if urlsplit(url)[:2] != origin:  # the token never goes to another host
            raise PollError("the platform's next page is on another host")
    raise PollError(f"more than {POLL_MAX_PAGES} pages of submissions")


def poll(batch: WorkerBatch, now: datetime | None = None) -> PollResult:
    """Apply the platform's submissions of the batch's study (idempotent); errors are kept on the batch."""
    now = now or timezone.now()
    base_url, token = settings.CROWD_PLATFORM_API_URL, settings.CROWD_PLATFORM_API_TOKEN
    if not base_url or not batch.study_id:
        return PollResult(True)
    try:
        rows = fetch_submissions(batch.study_id, base_url=base_url, token=token)
    except PollError as exc:
        log.warning("polling the platform for batch %s failed: %s (tried again next sweep)", batch.pk, exc)
        WorkerBatch.objects.filter(pk=batch.pk).update(polled_at=now, poll_error=str(exc)[:300])
        return PollResult(False, error=str(exc))
    changed = 0
    for row in rows:
        participant = str(row.get("participant_id") or row.get("participant") or "").strip()
        submission = str(row.get("id") or "").strip()
        status = str(row.get("status") or "").strip()
        if not status or not (participant or submission):
            continue
        applied = lifecycle.apply_submission_status(batch, participant_id=participant, submission_id=submission,
                                                    status=status, channel=PlatformEvent.Channel.POLL, now=now)
        changed += applied.processed
    WorkerBatch.objects.filter(pk=batch.pk).update(polled_at=now, poll_error="")
    return PollResult(True, seen=len(rows), changed=changed)


# --- the sweep --------------------------------------------------------------------------------------


def sweep(now: datetime | None = None) -> dict[str, int]:
    """The `crowd.lifecycle_sweep` job: time out the assignments past their limit, then poll the platform for
    every open batch with a study id (crowd.platform.poll: its errors are logged and kept on the batch, and the
    next sweep tries again; nothing raises out of here)."""
    now = now or timezone.now()
    timed_out = lifecycle.time_out_due(now)
    polled = changed = failed = 0
    for batch in pollable(now):
        try:
            result = poll(batch, now=now)
        except Exception:  # noqa: BLE001 - one batch's failure must not stop the others or the job loop
            log.exception("polling the platform for batch %s failed", batch.pk)
            failed += 1
            continue
        polled += 1
        changed += result.changed
        failed += 0 if result.ok else 1
    return {"timed_out": timed_out, "polled": polled, "changed": changed, "failed": failed}


def pollable(now: datetime):
    """Open batches with a study id (until a day after they expire: late returns still free places)."""
    return (WorkerBatch.objects.filter(closed=False, expires_at__gte=now - timedelta(days=1))
            .exclude(study_id="").order_by("id"))
