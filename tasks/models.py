from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from pydantic import ValidationError as PydanticError

from tasks.kinds import TaskConfig, TaskKind, get_kind, kind_choices


def payload_hash(*parts: Any) -> str:
    """A stable content key: what makes an imported row the same row on re-import."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def pydantic_message(error: PydanticError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in error.errors(include_url=False)
    )


class TaskQuerySet(models.QuerySet):
    def visible_to(self, user) -> TaskQuerySet:
        """The tasks `user` may see at all (the one rule; `tasks.access` applies it to requests).

        Admins see every task and owners their own, whatever its state; everyone else (signed in or
        not) sees a task only while it is public and active. A hidden or inactive task does not exist
        for them: 404, never 403, so its existence is not leaked. What a user may do on a task they see
        is decided by roles.
        """
        if user.is_authenticated and (user.is_staff or user.is_superuser):
            return self
        open_to_all = Q(visibility=Task.Visibility.PUBLIC, active=True)
        if user.is_authenticated:
            return self.filter(open_to_all | Q(pk__in=Task.owners.through.objects.filter(user=user).values("task")))
        return self.filter(open_to_all)


class Task(models.Model):
    class Visibility(models.TextChoices):
        PUBLIC = "public", _("Public")
        HIDDEN = "hidden", _("Hidden")

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=32, choices=kind_choices())
    config = models.JSONField(default=dict, blank=True)
    owners = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="owned_tasks", blank=True)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def kind_impl(self) -> TaskKind:
        return get_kind(self.kind)

    @property
    def typed_config(self) -> TaskConfig:
        """The validated configuration (defaults filled in), parsed once per change of `config`.

        Not called `settings`, so it is never mistaken for `django.conf.settings`. The cache keeps a copy of
        the raw config it parsed and compares it, so assigning or mutating `config` is always seen.
        """
        cached = self.__dict__.get("_typed_config")
        # Compared as values (C-speed dict equality), not re-serialised on every access: a request reads it often.
        if cached is None or cached[0] != self.kind or cached[1] != self.config:
            cached = (self.kind, copy.deepcopy(self.config), self.kind_impl.parse_config(self.config))
            self.__dict__["_typed_config"] = cached
        return cached[2]

    def clean(self) -> None:
        try:
            kind = get_kind(self.kind)
        except KeyError as exc:
            raise ValidationError({"kind": str(exc)}) from None
        try:
            self.config = kind.parse_config(self.config).model_dump()
        except PydanticError as exc:
            raise ValidationError({"config": pydantic_message(exc)}) from None

    def save(self, *args, **kwargs) -> None:
        self.clean()
        super().save(*args, **kwargs)

    @property
    def current_round(self) -> Round | None:
        return self.rounds.filter(status=Round.Status.OPEN).first()


class Round(models.Model):
    """A round of collection. Its status moves only through `tasks.round_state` (draft -> open -> closed)."""

    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        OPEN = "open", _("Open")
        CLOSED = "closed", _("Closed")

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    description = models.CharField(max_length=500, blank=True)
    opened_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["task", "number"]
        constraints = [
            models.UniqueConstraint(fields=["task", "number"], name="round_number_unique_per_task"),
            models.UniqueConstraint(
                fields=["task"], condition=Q(status="open"), name="one_open_round_per_task"
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="round_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.task.slug} round {self.number} ({self.status})"


class Context(models.Model):
    """What a writer sees: a premise, a passage, or a prompt. Round is null for the task's pool."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="contexts")
    round = models.ForeignKey(Round, on_delete=models.SET_NULL, null=True, blank=True, related_name="contexts")
    payload = models.JSONField()
    source = models.CharField(max_length=100, blank=True, default="")
    key = models.CharField(max_length=64, help_text="content hash; re-imports never duplicate")
    hardness_score = models.FloatField(null=True, blank=True)
    is_seed = models.BooleanField(default=False, help_text="chosen by hardness seeding for its round")
    times_used = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["task", "key"], name="context_unique_per_task")]
        indexes = [models.Index(fields=["task", "round", "times_used"])]

    def __str__(self) -> str:
        first = next(iter(self.payload.values()), "") if isinstance(self.payload, dict) else self.payload
        return str(first)[:60]


class LabeledItem(models.Model):
    """Labelled data that was not written on the platform: seed pool and evaluation sets."""

    class Split(models.TextChoices):
        TRAIN = "train", _("Train / seed pool")
        DEV = "dev", _("Development")
        TEST = "test", _("Test")
        # A stable slice of imported train rows (tasks.importing.HOLD_OUT_*): never trained on, never a seed;
        # the retraining gate's "base held-out" set (rounds.datasets.BASE_HELD_OUT).
        HELD_OUT = "heldout", _("Held out from the train data")

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="labeled_items")
    collection = models.CharField(max_length=100, help_text="the imported set, e.g. sst2 or anli-r1")
    split = models.CharField(max_length=10, choices=Split.choices)
    context = models.JSONField(default=dict, blank=True)
    input = models.JSONField()
    target = models.JSONField()
    external_id = models.CharField(max_length=200, blank=True, default="")
    key = models.CharField(max_length=64)
    hardness_score = models.FloatField(null=True, blank=True)
    seed_round = models.ForeignKey(
        Round, on_delete=models.SET_NULL, null=True, blank=True, related_name="seed_items",
        help_text="set when hardness seeding chose this item for a round",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["task", "collection", "key"], name="labeled_item_unique")]
        indexes = [models.Index(fields=["task", "collection", "split"])]

    def __str__(self) -> str:
        return f"{self.collection}/{self.split}: {str(self.input)[:50]}"


# --- the crowd on a task: roles granted per task, suspensions, guidelines ---------------------------


class TaskMembership(models.Model):
    """A role held on one task: passed its quiz, appointed by an owner, came through a worker link, or
    given by the demo. `tasks.roles.has_role` consults it next to the global groups."""

    class Role(models.TextChoices):
        ANNOTATOR = "annotator", _("Writer")
        VALIDATOR = "validator", _("Validator")
        EXPERT = "expert", _("Expert")

    class Source(models.TextChoices):
        QUIZ = "quiz", _("Passed the quiz")
        OWNER = "owner", _("Appointed by an owner")
        LINK = "link", _("External worker link")
        DEMO = "demo", _("Demo account")

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="task_memberships")
    role = models.CharField(max_length=10, choices=Role.choices)
    source = models.CharField(max_length=10, choices=Source.choices)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "role", "user"]
        constraints = [models.UniqueConstraint(fields=["task", "user", "role"], name="one_membership_per_role")]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} on {self.task.slug} ({self.source})"


class Suspension(models.Model):
    """An account suspended from a task by its owner: it holds no role there while the row is active."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="suspensions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="suspensions")
    reason = models.CharField(max_length=500)
    suspended_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "user"], condition=Q(lifted_at__isnull=True), name="one_active_suspension"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} suspended from {self.task.slug}"


class Guidelines(models.Model):
    """One version of a task's guidelines (Markdown, with worked examples). Versions are kept; the
    highest is current. Writers and validators acknowledge each new version before they continue."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="guidelines")
    version = models.PositiveIntegerField()
    text = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "-version"]
        constraints = [models.UniqueConstraint(fields=["task", "version"], name="guidelines_version_unique")]

    def __str__(self) -> str:
        return f"{self.task.slug} guidelines v{self.version}"


class GuidelinesAcknowledgement(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField()
    acknowledged_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "task", "version"], name="one_acknowledgement_per_version")
        ]
