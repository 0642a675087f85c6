"""Published dataset snapshots and read-only API tokens (a proxy of the accounts app's tokens).

A snapshot is a bundle (zip) written once under VAR_DIR/exports; its checksum is recorded when it is
published and never changes. Later validations produce a new version, never an edited old one.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts import tokens
from accounts.models import ApiToken, ApiTokenQuerySet


class DatasetSnapshot(models.Model):
    class Audience(models.TextChoices):
        PUBLIC = "public", _("Anyone who can see the task (also signed out, for public tasks)")
        RESEARCHERS = "researchers", _("Researchers, task owners and admins")

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
    validated = models.JSONField(default=dict, blank=True,
                                 help_text="rows per split whose label validators confirmed (empty: before issue 39)")
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

    FROZEN = ("task_id", "round_id", "version", "path", "sha256", "content_sha256", "size_bytes", "formats", "counts",
              "validated")

    def save(self, *args, **kwargs) -> None:
        """A published snapshot is immutable: only its audience may change afterwards."""
        if self.pk is not None:
            old = type(self).objects.filter(pk=self.pk).values(*self.FROZEN).first()
            if old and any(old[name] != getattr(self, name) for name in self.FROZEN):
                raise ValidationError("a published snapshot is immutable; publish a new version instead")
        super().save(*args, **kwargs)

    @property
    def splits(self) -> list[str]:
        """The splits that hold rows (only those have files worth loading)."""
        return [name for name in ("train", "dev", "test") if (self.counts or {}).get(name)]

    @property
    def rows(self) -> int:
        return sum((self.counts or {}).get(name, 0) for name in ("train", "dev", "test"))

    @property
    def validated_rows(self) -> int | None:
        return sum(self.validated.get(name, 0) for name in ("train", "dev", "test")) if self.validated else None

    @property
    def file_name(self) -> str:
        return f"{self.task.slug}-round{self.round.number}-v{self.version}.zip"


class ReadOnlyTokenManager(models.Manager.from_queryset(ApiTokenQuerySet)):
    def get_queryset(self) -> ApiTokenQuerySet:
        return super().get_queryset().filter(access=ApiToken.Access.READ)


class ReadOnlyToken(ApiToken):
    """Read-only API tokens (`Authorization: Bearer dro_…` or `Token dro_…`): the accounts app's tokens with
    read access, which expire and are revoked like every token (accounts.tokens). Kept under this name for
    the datasets API (`/api/tokens/readonly/`) and the `readonly_token` command."""

    objects = ReadOnlyTokenManager()

    class Meta:
        proxy = True

    @classmethod
    def issue(cls, user, name: str = "") -> tuple[ReadOnlyToken, str]:
        """A new read-only token and its key, not counted against TOKEN_RATE (commands and services)."""
        token, raw = tokens.issue(user, name, ApiToken.Access.READ, counted=False)
        return cls.objects.get(pk=token.pk), raw

    def revoke(self) -> None:
        tokens.revoke(self.user, self.pk)
        self.refresh_from_db()
