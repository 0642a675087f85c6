from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


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
    # A vote stops counting when its validator is suspended from the task or falls below the task's gold
    # accuracy; it is kept (for the record) but no consensus, figure or export counts it.
    # db_default as well: rows written by raw SQL (the benchmarks' loaders) count.
    counted = models.BooleanField(default=True, db_default=True)
    excluded_reason = models.CharField(max_length=20, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["example", "validator"], name="one_validation_per_validator"),
        ]
        indexes = [models.Index(fields=["validator", "created_at"])]

    def __str__(self) -> str:
        return f"{self.validator} says {self.verdict} on {self.example_id}"

    @property
    def is_override(self) -> bool:
        return self.mode != self.Mode.CROWD


class QueueItem(models.Model):
    """Queue state of one example: derived, written by validation.queue in the same transaction as each vote.

    `fooled` mirrors the example's verdict once it is scored (null while scoring is pending) so that the
    queue order (fooled first, fewest votes, oldest) is one index scan. Every claim re-checks the example
    itself, so a stale mirror can delay an item but never hand out a wrong one.
    """

    example = models.OneToOneField(
        "annotation.Example", on_delete=models.CASCADE, primary_key=True, related_name="queue_item"
    )
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="+")
    fooled = models.BooleanField(null=True, blank=True)
    votes = models.PositiveSmallIntegerField(default=0, help_text="crowd votes so far")
    needed = models.PositiveSmallIntegerField(default=1, help_text="fewest further votes that could decide")
    open = models.BooleanField(default=True, help_text="still waits for crowd votes")

    class Meta:
        indexes = [
            # The queue order: fooled first, then fewest votes, then oldest (ids grow with time).
            models.Index(fields=["task", "-fooled", "votes", "example"], name="queue_order", condition=Q(open=True)),
            models.Index(
                fields=["round", "-fooled", "votes", "example"], name="queue_order_round", condition=Q(open=True)
            ),
            models.Index(fields=["task", "example"], name="queue_unscored", condition=Q(open=True, fooled__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"queue {self.example_id}: {self.votes} votes, {'open' if self.open else 'closed'}"


class Lease(models.Model):
    """A validator's short hold on an example, so that no more validators see it than votes it needs."""

    example = models.ForeignKey("annotation.Example", on_delete=models.CASCADE, related_name="leases")
    validator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="leases")
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["example", "validator"], name="one_lease_per_validator")]
        indexes = [models.Index(fields=["validator", "expires_at"]), models.Index(fields=["expires_at"])]

    def __str__(self) -> str:
        return f"{self.validator} holds {self.example_id} until {self.expires_at:%H:%M:%S}"


class GoldItem(models.Model):
    """An example whose right verdict an owner vouched for, mixed unannounced into the validation queue.

    A validator's answer on it is a `GoldAnswer`, not a vote: it never changes the example's consensus.
    """

    example = models.OneToOneField(
        "annotation.Example", on_delete=models.CASCADE, primary_key=True, related_name="gold"
    )
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    verdict = models.CharField(max_length=10, choices=Validation.Verdict.choices)
    label = models.JSONField(null=True, blank=True, help_text="the right label when the verdict is incorrect")
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["task", "active"])]

    def __str__(self) -> str:
        return f"gold {self.example_id}: {self.verdict}"


class GoldAnswer(models.Model):
    gold = models.ForeignKey(GoldItem, on_delete=models.CASCADE, related_name="answers")
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    validator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gold_answers")
    verdict = models.CharField(max_length=10, choices=Validation.Verdict.choices)
    label = models.JSONField(null=True, blank=True)
    correct = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gold", "validator"], name="one_gold_answer_per_validator")]
        indexes = [models.Index(fields=["task", "validator"])]

    def __str__(self) -> str:
        return f"{self.validator} on gold {self.gold_id}: {'right' if self.correct else 'wrong'}"


class ReliabilityLabel(models.Model):
    """The reliability-weighted (Dawid-Skene) outcome of an example's crowd votes, next to the plain
    consensus; derived by `validation.reliability.refresh`, never edited."""

    example = models.OneToOneField(
        "annotation.Example", on_delete=models.CASCADE, primary_key=True, related_name="reliability"
    )
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    outcome = models.CharField(max_length=10, choices=Validation.Verdict.choices)
    label = models.JSONField(null=True, blank=True, help_text="the label the outcome implies (null when flagged)")
    confidence = models.FloatField()

    def __str__(self) -> str:
        return f"{self.example_id}: {self.outcome} ({self.confidence:.2f})"


class ReliabilityRun(models.Model):
    """When a task's reliability labels were last derived, and from which votes (so they are redone only
    when the votes changed)."""

    task = models.OneToOneField("tasks.Task", on_delete=models.CASCADE, primary_key=True, related_name="+")
    votes_key = models.CharField(max_length=64)
    computed_at = models.DateTimeField()
    validators = models.JSONField(default=dict, help_text="validator id -> estimated accuracy")
