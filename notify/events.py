"""What happened on a task, and who is told: `emit(task, event, data, people=...)`.

`emit` stores the Event, one Delivery per active webhook of the task that chose the event, and one Mail per person
concerned (the task's owners with an e-mail address, for every event but an appeal's decision; and the `people`
named, such as the writer whose appeal was decided), all IN THE CALLER'S TRANSACTION, in a savepoint of its own:
the event exists exactly when the action that caused it committed, and nothing is lost if the process dies after.
The delivery and mail jobs are queued once the transaction commits (notify.jobs); one that cannot be queued, or is
lost, is sent by the sweep (`notify.sweep`, Celery beat every 30 s). `emit` never raises into its caller and never
waits for a webhook or a mail server: a failure to record is logged and the caller's action goes on.

The call sites, each a line in the app that owns the action:
- round opened / closed: tasks.round_state sends `tasks.signals.round_changed` (tasks lies below notify), connected
  to `round_changed` here by notify.apps;
- pipeline waiting for the owner's approval / failed: rounds.pipeline (finish, fail_unqueued) calls
  `pipeline_stopped(run)`;
- dataset published: exports.services (a new snapshot) calls `dataset_published(snapshot)`;
- appeal decided: validation.services (an expert's or owner's vote on an appealed example) calls
  `appeal_decided(example, decision)`.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _

from dynabench_site.errors import Conflict
from dynabench_site.jobs import dispatch
from notify import jobs
from notify.models import SUBSCRIBABLE, Delivery, Event, EventKind, Mail, Webhook

log = logging.getLogger(__name__)

# Events mailed to the task's owners (an appeal's decision goes to its writer only: the owners decided it).
MAILED_TO_OWNERS = {EventKind.ROUND_OPENED, EventKind.ROUND_CLOSED, EventKind.PIPELINE_WAITING,
                    EventKind.PIPELINE_FAILED, EventKind.DATASET_PUBLISHED}


def emit(task, event: str, data: dict[str, Any], *, people: Iterable[Any] = ()) -> Event | None:
    """Record `event` on `task` with its deliveries and mails in the caller's transaction; queue them on commit.
    Returns the Event, or None when nothing could be recorded (logged; never raised)."""
    try:
        with transaction.atomic():  # a savepoint: a failure here undoes our rows only, never the caller's
            return _record(task, event, data, people)
    except Exception:
        log.exception("notify: could not record the event %s on task %s", event, getattr(task, "pk", task))
        return None


def _record(task, event: str, data: dict[str, Any], people: Iterable[Any]) -> Event:
    if event not in SUBSCRIBABLE:
        raise ValueError(f"unknown event {event!r}")
    plain = json.loads(json.dumps({"task": task_data(task), **data}, cls=DjangoJSONEncoder))  # times as ISO text
    stored = Event.objects.create(task=task, kind=event, data=plain)
    hooks = [h for h in Webhook.objects.filter(task=task, disabled_at__isnull=True) if h.wants(event)]
    deliveries = Delivery.objects.bulk_create([Delivery(event=stored, webhook=h) for h in hooks])
    mails = Mail.objects.bulk_create([Mail(event=stored, user=user, address=address)
                                      for user, address in recipients(task, event, people)])
    queue_deliveries([d.pk for d in deliveries], [m.pk for m in mails])
    return stored


def recipients(task, event: str, people: Iterable[Any] = ()) -> list[tuple[Any, str]]:
    """(user, address) of everyone concerned who has an e-mail address, each address once."""
    users = list(task.owners.filter(is_active=True)) if event in MAILED_TO_OWNERS else []
    users += [p for p in people if p is not None and getattr(p, "is_active", False)]
    found: dict[str, Any] = {}
    for user in users:
        address = (user.email or "").strip()
        if address and address.lower() not in found:
            found[address.lower()] = (user, address)
    return list(found.values())


def queue_deliveries(delivery_ids: list[int], mail_ids: list[int]) -> None:
    """Queue each delivery and mail job once the transaction commits (dynabench_site.jobs.dispatch). A job that
    cannot start is logged and left to the sweep."""
    for pk in delivery_ids:
        dispatch(jobs.deliver, pk, on_failure=_left_to_sweep("delivery", pk))
    for pk in mail_ids:
        dispatch(jobs.send_mail, pk, on_failure=_left_to_sweep("mail", pk))


def _left_to_sweep(what: str, pk: int):
    def note(exc: Exception) -> None:
        log.warning("notify: %s %s could not be queued (%s); the sweep sends it", what, pk, exc)

    return note


# --- what each event carries -------------------------------------------------------------------------------------


def never_raises(fn: Callable[..., None]) -> Callable[..., None]:
    """A call site's helper: whatever goes wrong while describing the event is logged, never raised."""

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> None:
        try:
            with transaction.atomic():  # a savepoint: a database error here leaves the caller's transaction usable
                fn(*args, **kwargs)
        except Exception:
            log.exception("notify: %s could not describe its event", fn.__name__)

    return guarded


def task_data(task) -> dict[str, Any]:
    return {"slug": task.slug, "name": task.name}


def _path(name: str, *args: Any) -> str:
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return ""


@never_raises
def round_changed(sender=None, round_=None, status: str = "", **_: Any) -> None:
    """tasks.signals.round_changed: a round opened or closed (sent inside tasks.round_state.transition)."""
    kind = {"open": EventKind.ROUND_OPENED, "closed": EventKind.ROUND_CLOSED}.get(status)
    if kind is None or round_ is None:
        return
    emit(round_.task, kind, {"round": round_.number, "status": status, "opened_at": round_.opened_at,
                             "closed_at": round_.closed_at, "description": round_.description,
                             "path": _path("rounds-console-rounds", round_.task.slug)})


@never_raises
def pipeline_stopped(run) -> None:
    """A pipeline run now waits for the owner's approval, or failed (rounds.pipeline)."""
    kind = {"awaiting": EventKind.PIPELINE_WAITING, "failed": EventKind.PIPELINE_FAILED}.get(run.status)
    if kind is None:
        return
    waiting = run.steps.filter(status="waiting").values_list("message", flat=True).first() if kind == \
        EventKind.PIPELINE_WAITING else None
    emit(run.task, kind, {"run": run.pk, "status": run.status, "error": (run.error or "")[:1000],
                          "reason": waiting or "",
                          "from_round": run.from_round.number if run.from_round_id else None,
                          "path": _path("rounds-job", run.pk)})


@never_raises
def dataset_published(snapshot) -> None:
    """A new dataset version of a round was published (exports.services)."""
    emit(snapshot.task, EventKind.DATASET_PUBLISHED, {
        "round": snapshot.round.number, "version": snapshot.version, "audience": snapshot.audience,
        "counts": snapshot.counts, "formats": snapshot.formats,
        "path": _path("exports-console", snapshot.task.slug)})


@never_raises
def appeal_decided(example, outcome: str, label: Any = None) -> None:
    """An expert or owner decided an appealed example (validation.services): its writer is told."""
    task = example.round.task
    author = get_user_model().objects.filter(pk=example.author_id).first() if example.author_id else None
    emit(task, EventKind.APPEAL_DECIDED, {"example": example.pk, "round": example.round.number,
                                          "outcome": outcome, "label": label,
                                          "path": _path("annotation-my-examples")}, people=[author])


def send_test(hook: Webhook, by=None) -> Delivery:
    """A test event for this webhook alone (whatever events it chose), queued like any other."""
    if not hook.active:
        raise Conflict(_("this webhook is switched off; switch it on first"))
    data = {"task": task_data(hook.task), "message": "A test event from the task's console.",
            "sent_by": getattr(by, "username", None)}
    with transaction.atomic():
        event = Event.objects.create(task=hook.task, kind=EventKind.TEST, data=data)
        delivery = Delivery.objects.create(event=event, webhook=hook)
        queue_deliveries([delivery.pk], [])
    return delivery
