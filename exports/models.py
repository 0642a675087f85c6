"""Published dataset snapshots and read-only API tokens.

A snapshot is a bundle (zip) written once under VAR_DIR/exports; its checksum is recorded when it is
published and never changes. Later validations produce a new version, never an edited old one.
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "dro_"


class DatasetSnapshot(models.Model):
    class Audience(models.TextChoices):
        PUBLIC = "public", "Anyone who can see the task (also signed out, for public tasks)"
        RESEARCHERS = "researchers", "Researchers, task owners and admins"

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="snapshots")
    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="snapshots")
    version = models.PositiveIntegerField()
    audience = models.CharField(max_length=12, choices=Audience.choices, default=Audience.RESEARCHERS)
    path = models.CharField(max_length=500, help_text="bundle file, relative to VAR_DIR/exports")
    sha256 = models.CharField(max_length=64, help_text="checksum of the bundle file")
    content_sha256 = models.CharField(max_length=64, help_text="checksum of the data files (the manifest)")
    size_bytes = models.BigIntegerField()
    formats = models.JSONField(default=list)
    counts = models.JSONField(default=dict, help_text="rows per split")
    include_excluded = models.BooleanField(default=False)
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    published_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["task", "round__number", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["round", "version"], name="snapshot_version_unique_per_round"),
        ]

    def __str__(self) -> str:
        return f"{self.task.slug} round {self.round.number} v{self.version}"

    FROZEN = ("task_id", "round_id", "version", "path", "sha256", "content_sha256", "size_bytes", "formats", "counts")

    def save(self, *args, **kwargs) -> None:
        """A published snapshot is immutable: only its audience may change afterwards."""
        if self.pk is not None:
            old = type(self).objects.filter(pk=self.pk).values(*self.FROZEN).first()
            if old and any(old[name] != getattr(self, name) for name in self.FROZEN):
                raise ValidationError("a published snapshot is immutable; publish a new version instead")
        super().save(*args, **kwargs)

    @property
    def file_name(self) -> str:
        return f"{self.task.slug}-round{self.round.number}-v{self.version}.zip"


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ReadOnlyTokenQuerySet(models.QuerySet):
    def active(self) -> ReadOnlyTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ReadOnlyToken(models.Model):
    """An API token for scripts that may only read (GET, HEAD, OPTIONS), acting as its user.

    Only a hash of the key is stored; the key itself is shown once, when it is created.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="readonly_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    key_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="the key's first characters, to recognise it")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ReadOnlyTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"read-only token {self.hint}… of {self.user}"

    @classmethod
    def issue(cls, user, name: str = "") -> tuple[ReadOnlyToken, str]:
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, name=name, key_hash=hash_key(raw), hint=raw[:10])
        return token, raw

    def revoke(self) -> None:
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])
