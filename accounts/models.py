"""Where an account came from: what the sybil rules compare (sign-up address, external worker id)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Account(models.Model):
    """The origin of one user account. Accounts made by staff or by a command have none (no row, or no
    address): only what the platform itself observed is recorded, never a value a client declared."""

    class Origin(models.TextChoices):
        SIGNUP = "signup", _("Signed up")
        EXTERNAL = "external", _("External worker link")

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="account"
    )
    origin = models.CharField(max_length=10, choices=Origin.choices)
    signup_ip = models.GenericIPAddressField(
        null=True, blank=True, help_text="the address the sign-up request came from (REMOTE_ADDR)"
    )
    external_source = models.CharField(max_length=40, blank=True, default="", help_text="e.g. prolific, mturk")
    external_worker_id = models.CharField(
        max_length=100, blank=True, default="", help_text="from a signed link only, never from a header"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # No uniqueness on (source, worker id): the same worker has one account per task they were
        # recruited for (`crowd.models.WorkerAccount` holds that rule), and all of them are linked here.
        indexes = [
            models.Index(fields=["signup_ip"], name="account_signup_ip"),
            models.Index(fields=["external_worker_id"], name="account_worker_id"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} ({self.origin})"


class ApiTokenQuerySet(models.QuerySet):
    def active(self, now=None) -> ApiTokenQuerySet:
        """Tokens that authenticate now: not revoked, not expired."""
        return self.filter(revoked_at__isnull=True, expires_at__gt=now or timezone.now())


class ApiToken(models.Model):
    """A key for API scripts, acting as its user: full access, or read only (GET, HEAD, OPTIONS).

    Only a SHA-256 of the key is stored; the key is shown once, when it is created. Every token expires
    (TOKEN_TTL_DAYS after creation) and its owner can revoke it ("My tokens", or DELETE /api/tokens/{id}/).
    """

    class Access(models.TextChoices):
        FULL = "full", _("Full access (acts as you)")
        READ = "read", _("Read only (GET, HEAD, OPTIONS)")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    access = models.CharField(max_length=4, choices=Access.choices, default=Access.FULL)
    key_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="the key's first characters, to recognise it")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "created_at"], name="apitoken_user_created")]

    def __str__(self) -> str:
        return f"{self.get_access_display()} token {self.hint}… of {self.user}"

    @property
    def read_only(self) -> bool:
        return self.access == self.Access.READ

    @property
    def state(self) -> str:
        """active, expired or revoked."""
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= timezone.now() else "active"
