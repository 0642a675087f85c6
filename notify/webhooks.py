"""Outgoing webhooks: the owner's addresses, the Standard Webhooks signature, and one delivery try.

Signing (https://www.standardwebhooks.com, the maintained `standardwebhooks` library, MIT): every request carries
`webhook-id` (the event's message id, the same on every try: receivers drop repeats), `webhook-timestamp` (Unix
seconds of this try) and `webhook-signature` `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed with the
base64-decoded secret; the secret is shown to the owner once, as `whsec_<base64>`.

Where a webhook may connect: the project's egress rule (zoo.llm.egress): the host's addresses are resolved once per
connection and a private, loopback or link-local one is refused at connect time, unless the operator allows it
(settings.NOTIFY_ALLOW_PRIVATE); a literal private address is refused already when the owner adds it. No redirect is
followed (a 3xx is a failed try), and every call has a timeout (NOTIFY_TIMEOUT_SECONDS).

A try (`attempt`) claims its delivery first (a conditional update), so two jobs never send the same delivery at once,
and a delivery that is done or not yet due is left alone: queueing twice is harmless. A failed try is retried after
NOTIFY_RETRY_BASE_SECONDS, doubling, at most NOTIFY_RETRY_MAX_SECONDS, NOTIFY_MAX_ATTEMPTS tries in all; a delivery
that used them all has failed, and a webhook whose deliveries failed NOTIFY_DISABLE_AFTER times in a row is switched
off (the console says so and why; the owner switches it on again).
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from standardwebhooks.webhooks import Webhook as Signer

from dynabench_site.errors import Conflict, InvalidInput
from notify.models import SUBSCRIBABLE, Attempt, Delivery, Event, Webhook
from zoo.llm import egress

MAX_WEBHOOKS_PER_TASK = 10
MAX_URL_CHARS = 500
SECRET_BYTES = 24
USER_AGENT = "dynabench-webhooks/1"
RESPONSE_PEEK_BYTES = 300  # of a refusing server's answer, kept with the try


# --- the owner's addresses ---------------------------------------------------------------------------------------


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def clean_url(value: object) -> str:
    """An http(s) address with a host and no credentials; a literal private address only where the operator allows
    them (a name is judged by what it resolves to, at connect time)."""
    url = str(value or "").strip()
    if not url:
        raise InvalidInput(_("url: give the address to send events to"), field="url")
    if len(url) > MAX_URL_CHARS:
        raise InvalidInput(_("url: at most %(n)d characters") % {"n": MAX_URL_CHARS}, field="url")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InvalidInput(_("url: not a valid address"), field="url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(_("url: must start with https:// (or http://) and name a host"), field="url")
    if parts.username or parts.password:
        raise InvalidInput(_("url: must not carry a user name or password (the signature authenticates us)"),
                           field="url")
    if port == 0 or any(c.isspace() for c in url):
        raise InvalidInput(_("url: not a valid address"), field="url")
    if not settings.NOTIFY_ALLOW_PRIVATE:
        problem = egress.host_problem(parts.hostname)
        if problem:
            raise InvalidInput(_("url: %(problem)s; webhooks reach public addresses only") % {"problem": problem},
                               field="url")
    return url


def clean_events(values: object) -> list[str]:
    chosen = [str(v) for v in (values or [])] if isinstance(values, (list, tuple)) else []
    unknown = sorted(set(chosen) - set(SUBSCRIBABLE))
    if unknown:
        raise InvalidInput(_("events: unknown event(s) %(names)s; choose among %(known)s")
                           % {"names": ", ".join(unknown), "known": ", ".join(SUBSCRIBABLE)}, field="events")
    if not chosen:
        raise InvalidInput(_("events: choose at least one event"), field="events")
    return [kind for kind in SUBSCRIBABLE if kind in chosen]


def add(task, url: object, events: object, by=None) -> Webhook:
    """A new webhook for `task` with a fresh secret (returned on it: the caller shows it once)."""
    url, chosen = clean_url(url), clean_events(events)
    with transaction.atomic():
        type(task).objects.select_for_update().filter(pk=task.pk).first()  # count and add under the task's lock
        if Webhook.objects.filter(task=task).count() >= MAX_WEBHOOKS_PER_TASK:
            raise Conflict(_("this task has %(n)d webhooks already; delete one first") % {"n": MAX_WEBHOOKS_PER_TASK})
        return Webhook.objects.create(task=task, url=url, events=chosen, secret=new_secret(), created_by=by)


def enable(hook: Webhook) -> bool:
    """Switch a webhook on again (its failures in a row start from zero). False when it was on."""
    return bool(Webhook.objects.filter(pk=hook.pk, disabled_at__isnull=False).update(
        disabled_at=None, disabled_reason="", consecutive_failures=0))


# --- signing ------------------------------------------------------------------------------------------------------


def body_of(event: Event) -> str:
    """The request body: the Standard Webhooks payload shape (type, timestamp, data)."""
    payload = {"type": event.kind, "timestamp": event.created_at.isoformat(), "data": event.data}
    return json.dumps(payload, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(",", ":"))


def sign(secret: str, msg_id: str, timestamp: int, body: str) -> str:
    """`v1,<base64 signature>` of `{msg_id}.{timestamp}.{body}` (the standardwebhooks library's own signing)."""
    return Signer(secret).sign(msg_id, datetime.fromtimestamp(timestamp, tz=UTC), body)


def signed_headers(secret: str, msg_id: str, body: str, timestamp: int | None = None) -> dict[str, str]:
    stamp = int(time.time()) if timestamp is None else timestamp
    return {"webhook-id": msg_id, "webhook-timestamp": str(stamp),
            "webhook-signature": sign(secret, msg_id, stamp, body),
            "content-type": "application/json", "user-agent": USER_AGENT}


# --- one try --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    state: str  # delivered | retry | failed | busy (claimed elsewhere, done, or not due)
    retry_at: datetime | None = None


def backoff_seconds(attempts: int) -> float:
    """The wait after the `attempts`-th failed try: NOTIFY_RETRY_BASE_SECONDS, doubling, at most
    NOTIFY_RETRY_MAX_SECONDS."""
    return min(float(settings.NOTIFY_RETRY_BASE_SECONDS) * 2 ** max(0, attempts - 1),
               float(settings.NOTIFY_RETRY_MAX_SECONDS))


def claim_seconds() -> float:
    """How long a try may hold its delivery: connecting and reading each within the timeout, and a margin."""
    return 2 * float(settings.NOTIFY_TIMEOUT_SECONDS) + 30


def claim(model, pk: int) -> bool:
    now = timezone.now()
    return bool(model.objects.filter(pk=pk, status=model.Status.PENDING, next_attempt_at__lte=now)
                .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
                .update(claimed_until=now + timedelta(seconds=claim_seconds())))


def post(url: str, body: str, headers: dict[str, str]) -> tuple[int | None, str]:
    """One call: (the status code or None, the error: '' on a 2xx)."""
    timeout = float(settings.NOTIFY_TIMEOUT_SECONDS)
    session = egress.session(allow_private=settings.NOTIFY_ALLOW_PRIVATE)
    try:
        with session.post(url, data=body.encode(), headers=headers, timeout=(timeout, timeout),
                          allow_redirects=False, stream=True) as response:
            code = response.status_code
            if 200 <= code < 300:
                return code, ""
            if 300 <= code < 400:
                return code, f"redirect to {response.headers.get('location', '?')[:200]} (not followed)"
            peek = response.raw.read(RESPONSE_PEEK_BYTES, decode_content=True) or b""
            return code, f"HTTP {code}: {peek.decode('utf-8', 'replace').strip()}"[:500]
    except requests.RequestException as exc:
        refused = egress.refusal(exc)
        if refused is not None:
            return None, f"refused: {refused.host} resolves to {refused.address}, {refused.problem}"[:500]
        if isinstance(exc, requests.Timeout):
            return None, f"no answer within {timeout:g} s"
        if isinstance(exc, requests.ConnectionError):
            return None, f"could not connect: {_root(exc)}"[:500]
        return None, f"{type(exc).__name__}: {exc}"[:500]
    finally:
        session.close()


def _root(exc: BaseException) -> str:
    while exc.__cause__ is not None or (exc.args and isinstance(exc.args[0], BaseException)):
        exc = exc.__cause__ or exc.args[0]
    text = str(exc)
    return text.split(": ", 1)[-1] if "Failed to establish" in text else text


def attempt(delivery_id: int) -> Outcome:
    """One try of a delivery, if it is pending, due and nobody else is trying it; recorded in its log."""
    if not claim(Delivery, delivery_id):
        return Outcome("busy")
    delivery = Delivery.objects.select_related("event", "webhook").get(pk=delivery_id)
    hook, event, number = delivery.webhook, delivery.event, delivery.attempts + 1
    if not hook.active:
        Delivery.objects.filter(pk=delivery_id).update(
            status=Delivery.Status.FAILED, claimed_until=None, finished_at=timezone.now(),
            last_error="the webhook is switched off")
        return Outcome("failed")
    body = body_of(event)
    started, clock = timezone.now(), time.monotonic()
    code, error = post(hook.url, body, signed_headers(hook.secret, event.msg_id, body))
    duration_ms = int((time.monotonic() - clock) * 1000)
    return record(delivery, hook, number, started, code, error, duration_ms)


def record(delivery: Delivery, hook: Webhook, number: int, started, code, error: str, duration_ms: int) -> Outcome:
    now = timezone.now()
    with transaction.atomic():
        Attempt.objects.create(delivery=delivery, number=number, started_at=started, status_code=code,
                               error=error, duration_ms=duration_ms)
        rows = Delivery.objects.filter(pk=delivery.pk)
        if not error:
            rows.update(status=Delivery.Status.DONE, attempts=number, claimed_until=None, finished_at=now,
                        last_error="")
            Webhook.objects.filter(pk=hook.pk).update(consecutive_failures=0)
            return Outcome("delivered")
        if number < int(settings.NOTIFY_MAX_ATTEMPTS):
            retry_at = now + timedelta(seconds=backoff_seconds(number))
            rows.update(attempts=number, claimed_until=None, next_attempt_at=retry_at, last_error=error)
            return Outcome("retry", retry_at)
        rows.update(status=Delivery.Status.FAILED, attempts=number, claimed_until=None, finished_at=now,
                    last_error=error)
        Webhook.objects.filter(pk=hook.pk).update(consecutive_failures=F("consecutive_failures") + 1)
        limit = int(settings.NOTIFY_DISABLE_AFTER)
        Webhook.objects.filter(pk=hook.pk, disabled_at__isnull=True, consecutive_failures__gte=limit).update(
            disabled_at=now, disabled_reason=(ngettext("switched off: its last delivery failed: %(error)s",
                                                       "switched off: %(n)d deliveries in a row failed; the last one: "
                                                       "%(error)s", limit) % {"n": limit, "error": error})[:300])
    return Outcome("failed")
