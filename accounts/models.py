"""Where an account came from: what the sybil rules compare (sign-up address, external worker id)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Account(models.Model):
    """The origin of one user account. Accounts made by staff or by a command have none (no row, or no
    address): only what the platform itself observed is recorded, never a value a client declared."""

    class Origin(models.TextChoices):
        SIGNUP = "signup", "Signed up"
        EXTERNAL = "external", "External worker link"

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
        indexes = [
            models.Index(fields=["signup_ip"], name="account_signup_ip"),
            models.Index(fields=["external_worker_id"], name="account_worker_id"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["external_source", "external_worker_id"],
                condition=~models.Q(external_worker_id=""),
                name="one_account_per_external_worker",
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_id} ({self.origin})"
