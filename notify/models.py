"""Notifications: what happened on a task (an Event), and how each interested party is told of it.

- `Webhook`: an owner's outgoing webhook for a task (an address, the events it wants, a Standard Webhooks secret),
  switched off (`disabled_at`, `disabled_reason`) after NOTIFY_DISABLE_AFTER deliveries in a row that failed.
- `Event`: one occurrence (round opened, pipeline failed, ...) with its JSON data, stored in the transaction of the
  action that caused it (notify.events.emit).
- `Delivery`: one event for one webhook, tried up to NOTIFY_MAX_ATTEMPTS times with backoff; each try is an
  `Attempt` (when, the status code, the error, how long it took): the console's delivery log.
- `Mail`: one event for one person's e-mail address, sent through Django's mail framework with the same retries.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class EventKind(models.TextChoices):
    ROUND_OPENED = "round_opened", _("Round opened")
    ROUND_CLOSED = "round_closed", _("Round closed")
    PIPELINE_WAITING = "pipeline_waiting", _("Pipeline waiting for approval")
    PIPELINE_FAILED = "pipeline_failed", _("Pipeline failed")
    DATASET_PUBLISHED = "dataset_published", _("Dataset published")
    APPEAL_DECIDED = "appeal_decided", _("Appeal decided")
    TEST = "test", _("Test event")


SUBSCRIBABLE = [kind for kind in EventKind.values if kind != EventKind.TEST]


class Webhook(models.Model):
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    events = models.JSONField(default=list, help_text="the event kinds sent to this address")
    secret = models.CharField(max_length=100, help_text="whsec_<base64>: the Standard Webhooks signing secret")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    consecutive_failures = models.PositiveIntegerField(default=0, help_text="deliveries failed in a row")
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["task", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.task.slug} → {self.url}"

    @property
    def active(self) -> bool:
        return self.disabled_at is None

    def wants(self, kind: str) -> bool:
        return kind == EventKind.TEST or kind in (self.events or [])


class Event(models.Model):
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="notify_events")
    kind = models.CharField(max_length=32, choices=EventKind.choices)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.kind} on {self.task_id} ({self.msg_id})"

    @property
    def msg_id(self) -> str:
        """The Standard Webhooks message id (header webhook-id): the same for every try and every webhook."""
        return f"msg_{self.uid.hex}"


class Outbox(models.Model):
    """What a delivery and a mail share: a state, tries, when the next try is due, and a claim while one runs."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claimed_until = models.DateTimeField(null=True, blank=True, help_text="a try runs until then")
    finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True


class Delivery(Outbox):
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="notify_delivery_due")]
        constraints = [models.UniqueConstraint(fields=["event", "webhook"], name="notify_one_delivery_per_webhook")]


class Attempt(models.Model):
    """One HTTP call of a delivery: the console's delivery log."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-started_at", "-pk"]

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class Mail(Outbox):
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="mails")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="+")
    address = models.EmailField(max_length=254)
    subject = models.CharField(max_length=300, blank=True, help_text="as sent")

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="notify_mail_due")]
        constraints = [models.UniqueConstraint(fields=["event", "address"], name="notify_one_mail_per_address")]
