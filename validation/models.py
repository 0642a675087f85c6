from __future__ import annotations

from django.conf import settings
from django.db import models


class Validation(models.Model):
    class Verdict(models.TextChoices):
        CORRECT = "correct", "Correct"
        INCORRECT = "incorrect", "Incorrect"
        FLAGGED = "flagged", "Flagged"

    class Mode(models.TextChoices):
        CROWD = "crowd", "Crowd"
        EXPERT = "expert", "Expert"
        OWNER = "owner", "Owner"

    example = models.ForeignKey("annotation.Example", on_delete=models.CASCADE, related_name="validations")
    validator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="validations")
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    label = models.JSONField(null=True, blank=True, help_text="the corrected label when the verdict is incorrect")
    reason = models.TextField(blank=True, default="")
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.CROWD)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["example", "validator"], name="one_validation_per_validator"),
        ]

    def __str__(self) -> str:
        return f"{self.validator} says {self.verdict} on {self.example_id}"
