"""E-mail for the same events, through Django's mail framework (django.core.mail: SMTP in production, the settings'
EMAIL_* and DEFAULT_FROM_EMAIL).

One Mail row per address (notify.events.emit); the job (notify.jobs.send_mail) claims it, renders the event's
plain-text template (frontend/templates/notify/email/<event>.txt) and its subject line, and sends it. A mail server
that is down or refuses is tried again with the webhooks' backoff (NOTIFY_RETRY_BASE_SECONDS, doubling, at most
NOTIFY_RETRY_MAX_SECONDS, NOTIFY_MAX_ATTEMPTS tries); the row records the address, the subject, when it was sent or
why it failed. Nothing here runs in the request that caused the event.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import override

from notify.models import EventKind, Mail
from notify.webhooks import Outcome, backoff_seconds, claim

# Where the links in a mail point: the site's own address, prefixed to the paths the events carry ("" leaves them
# relative). A module constant until the lead adds a setting for it.
SITE_URL = ""


def subject_for(kind: str, data: dict) -> str:
    task = (data.get("task") or {}).get("name", "")
    values = {"task": task, "round": data.get("round", ""), "version": data.get("version", ""),
              "run": data.get("run", ""), "outcome": data.get("outcome", "")}
    subjects = {
        EventKind.ROUND_OPENED: _("[%(task)s] Round %(round)s is open"),
        EventKind.ROUND_CLOSED: _("[%(task)s] Round %(round)s is closed"),
        EventKind.PIPELINE_WAITING: _("[%(task)s] The next round waits for your approval (run %(run)s)"),
        EventKind.PIPELINE_FAILED: _("[%(task)s] The round pipeline failed (run %(run)s)"),
        EventKind.DATASET_PUBLISHED: _("[%(task)s] Round %(round)s dataset v%(version)s is published"),
        EventKind.APPEAL_DECIDED: _("[%(task)s] Your appeal was decided"),
    }
    return (subjects.get(kind, _("[%(task)s] Notification")) % values)[:300]


def render(mail: Mail) -> tuple[str, str]:
    event = mail.event
    data = event.data or {}
    context = {"data": data, "task": data.get("task") or {}, "kind": event.kind, "event": event,
               "user": mail.user, "link": SITE_URL + data["path"] if data.get("path") else "",
               "console": SITE_URL + f"/tasks/{(data.get('task') or {}).get('slug', '')}/console/notifications/"}
    with override(settings.LANGUAGE_CODE):
        return subject_for(event.kind, data), render_to_string(f"notify/email/{event.kind}.txt", context).strip() + "\n"


def attempt(mail_id: int) -> Outcome:
    """One try of a pending, due mail nobody else is sending."""
    if not claim(Mail, mail_id):
        return Outcome("busy")
    mail = Mail.objects.select_related("event", "user").get(pk=mail_id)
    number = mail.attempts + 1
    error = ""
    subject = mail.subject
    try:
        subject, body = render(mail)
        connection = get_connection(fail_silently=False)
        EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [mail.address], connection=connection).send()
    except Exception as exc:  # the mail server is down or refused, or the template broke: recorded, retried
        error = f"{type(exc).__name__}: {exc}"[:500]
    now = timezone.now()
    rows = Mail.objects.filter(pk=mail_id)
    if not error:
        rows.update(status=Mail.Status.DONE, attempts=number, claimed_until=None, finished_at=now, subject=subject,
                    last_error="")
        return Outcome("delivered")
    if number < int(settings.NOTIFY_MAX_ATTEMPTS):
        retry_at = now + timedelta(seconds=backoff_seconds(number))
        rows.update(attempts=number, claimed_until=None, next_attempt_at=retry_at, last_error=error, subject=subject)
        return Outcome("retry", retry_at)
    rows.update(status=Mail.Status.FAILED, attempts=number, claimed_until=None, finished_at=now, last_error=error,
                subject=subject)
    return Outcome("failed")
