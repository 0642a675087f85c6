"""A task's consent: versioned Markdown written by the owner, each person's record of agreeing to a version, and
their withdrawal.

The rules:

* A new text is a new version (`publish`; the same text again changes nothing). Every version is kept: each record
  names exactly the version that was agreed to.
* While the task's study is on (study.gate), a person works only with a live record (not withdrawn) for the latest
  version: a new version asks everyone again.
* A record keeps the version, the time and the language the person read it in (the active interface language), and
  makes (or updates) the person's Participant row.
* Declining records nothing: the person does no work, and may come back and agree later.
* Withdrawal is final for the task's study: every record of the person is marked withdrawn (kept: the study's
  records need both dates), their participant row too, and the gate answers `withdrawn` from then on. Their
  examples leave new exports (`withdrawn_user_ids`, read by the exports), their survey answers leave the answer
  exports (study.records).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from dynabench_site import access_cache
from dynabench_site.errors import Conflict, InvalidInput
from dynabench_site.text import check_text
from study import texts
from study.models import Consent, ConsentRecord, Participant
from tasks.models import Task

MAX_CHARS = 50_000


def language() -> str:
    """The language the person reads the site in now (recorded with what they agree to and answer), as one of the
    site's language codes ("en", not "en-us")."""
    return texts.language_code(get_language())


def current(task) -> Consent | None:
    return Consent.objects.filter(task=task).order_by("-version").first()


@transaction.atomic
def publish(task, text: Any, by=None) -> Consent:
    """A new version when the text changed; the current one otherwise."""
    if not isinstance(text, str):
        raise InvalidInput(_("must be a text"), field="text")
    text = text.replace("\r\n", "\n").strip()
    if not text:
        raise InvalidInput(_("must not be empty"), field="text")
    if len(text) > MAX_CHARS:
        raise InvalidInput(_("is %(n)s characters long; the limit is %(limit)s") % {"n": len(text), "limit": MAX_CHARS},
                           field="text")
    check_text(text, "text")
    Task.objects.select_for_update().filter(pk=task.pk).first()  # one version number at a time
    latest = current(task)
    if latest is not None and latest.text == text:
        return latest
    version = (Consent.objects.filter(task=task).aggregate(v=Max("version"))["v"] or 0) + 1
    return Consent.objects.create(task=task, version=version, text=text, created_by=by)


def participant(user, task) -> Participant | None:
    if not getattr(user, "is_authenticated", False):
        return None
    return Participant.objects.filter(task=task, user=user).first()


def join(user, task, lang: str | None = None) -> Participant:
    """The person's participant row on the task, made if needed, with the language they use now."""
    lang = language() if lang is None else lang
    found, created = Participant.objects.get_or_create(task=task, user=user, defaults={"language": lang})
    if not created and lang and found.language != lang:
        found.language = lang
        found.save(update_fields=["language"])
    return found


def is_withdrawn(user, task) -> bool:
    return (Participant.objects.filter(task=task, user=user, withdrawn_at__isnull=False).exists()
            or ConsentRecord.objects.filter(task=task, user=user, withdrawn_at__isnull=False).exists())


def live_record(user, task, version: int | None = None) -> ConsentRecord | None:
    """The person's record for `version` (default: the latest) when it is not withdrawn."""
    if not getattr(user, "is_authenticated", False):
        return None
    if version is None:
        latest = current(task)
        if latest is None:
            return None
        version = latest.version
    return ConsentRecord.objects.filter(task=task, user=user, version=version, withdrawn_at__isnull=True).first()


@transaction.atomic
def agree(user, task, version: int | None) -> ConsentRecord:
    """Record that `user` agrees to the consent `version`, which must be the latest (409 otherwise, naming it)."""
    latest = current(task)
    if latest is None:
        raise Conflict(_("This task asks for no consent."))
    if version != latest.version:
        raise Conflict(_("This is not the current consent (version %(version)s): read the current version and agree "
                         "to it.") % {"version": latest.version}, extra={"consent_version": latest.version})
    if is_withdrawn(user, task):
        raise Conflict(_("You have withdrawn from this task's study; you cannot take part again."))
    lang = language()
    record, _created = ConsentRecord.objects.get_or_create(
        consent=latest, user=user, defaults={"task": task, "version": latest.version, "language": lang})
    join(user, task, lang)
    return record


@transaction.atomic
def withdraw(user, task) -> Participant:
    """Withdraw `user` from the task's study (final): their records and participant row are marked withdrawn."""
    records = ConsentRecord.objects.select_for_update().filter(task=task, user=user)
    if not records.exists():
        raise Conflict(_("You have not agreed to this task's consent, so there is nothing to withdraw from."))
    found = Participant.objects.select_for_update().filter(task=task, user=user).first()
    if (found is not None and found.withdrawn_at is not None) or not records.filter(withdrawn_at__isnull=True).exists():
        raise Conflict(_("You have already withdrawn from this task's study."))
    now = timezone.now()
    records.filter(withdrawn_at__isnull=True).update(withdrawn_at=now)
    found = found or join(user, task)
    found.withdrawn_at = now
    found.save(update_fields=["withdrawn_at"])
    access_cache.bump()  # the queryset update above sends no signal
    return found


def withdrawn_user_ids(task) -> set[int]:
    """The ids of everyone who withdrew from the task's study: their examples leave new exports."""
    ids = set(Participant.objects.filter(task=task, withdrawn_at__isnull=False).values_list("user_id", flat=True))
    ids |= set(ConsentRecord.objects.filter(task=task, withdrawn_at__isnull=False).values_list("user_id", flat=True))
    return ids


def status(user, task) -> dict[str, Any]:
    """The person's standing with the task's consent: the current version, and their latest record."""
    latest = current(task)
    record = None
    if getattr(user, "is_authenticated", False):
        record = ConsentRecord.objects.filter(task=task, user=user).order_by("-version").first()
    return {
        "version": latest.version if latest else None,
        "agreed": bool(record and latest and record.version == latest.version and record.withdrawn_at is None),
        "agreed_version": record.version if record else None,
        "agreed_at": record.agreed_at if record else None,
        "withdrawn_at": record.withdrawn_at if record else None,
        "language": record.language if record else None,
    }
