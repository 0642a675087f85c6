from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotation.fingerprints import fingerprint
from annotation.managers import ExampleQuerySet


class Assistance(models.TextChoices):
    """How an example relates to the writing assistant's suggestions (annotation.assistant.provenance)."""
    NONE = "", _("Without the assistant")
    AS_SUGGESTED = "as_suggested", _("Submitted as suggested")
    EDITED = "edited", _("Edited from a suggestion")
    OWN = "own", _("Written from scratch (suggestions shown)")


class Suggestion(models.Model):
    """One request to the writing assistant: candidates a language model wrote for a context and an intended
    label, each scored by the round's live ensemble before the writer sees it (annotation.assistant)."""

    class State(models.TextChoices):
        PENDING = "pending", _("Writing suggestions")
        READY = "ready", _("Ready")
        FAILED = "failed", _("Unavailable")

    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="suggestions")
    context = models.ForeignKey("tasks.Context", on_delete=models.SET_NULL, null=True, blank=True,
                                related_name="suggestions")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="suggestions")
    target = models.JSONField(help_text="the label the writer intends")
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    error = models.TextField(blank=True, default="", help_text="why there are no suggestions, for people")
    provider = models.CharField(max_length=20, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    # [{"text", "fooled", "ensemble_prediction", "model_predictions"}]; the verdict fields are null when the
    # round has no deployed ensemble yet
    candidates = models.JSONField(default=list, blank=True)
    shots = models.PositiveSmallIntegerField(default=0, help_text="verified fooling examples shown to the model")
    usage = models.JSONField(default=dict, blank=True, help_text="tokens in and out, seconds, calls")
    created_at = models.DateTimeField(auto_now_add=True)
    ready_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["author", "created_at"])]

    def __str__(self) -> str:
        return f"Suggestion {self.pk} ({self.state})"


class Example(models.Model):
    """One example a writer submitted, with the model verdict that the server decided."""

    class Scoring(models.TextChoices):
        PENDING = "pending", _("Saved — scoring")
        SCORED = "scored", _("Scored")
        FAILED = "failed", _("Scoring failed")

    class Map(models.TextChoices):
        """The word map (explanation) of a verdict: computed by a job of its own after the verdict is stored."""
        NONE = "", _("No map (no verdict yet)")
        PENDING = "pending", _("Map coming")
        READY = "ready", _("Map ready")
        UNAVAILABLE = "unavailable", _("No map (why: `explanation_error`)")

    class Consensus(models.TextChoices):
        UNVALIDATED = "unvalidated", _("Not yet decided")
        VERIFIED = "verified", _("Verified (label confirmed)")
        REJECTED = "rejected", _("Rejected (label wrong)")
        FLAGGED = "flagged", _("Flagged (unusable)")
        DISPUTED = "disputed", _("Disputed (sent to experts)")

    class Split(models.TextChoices):
        TRAIN = "train", _("Train")
        DEV = "dev", _("Dev")
        TEST = "test", _("Test")

    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="examples")
    context = models.ForeignKey("tasks.Context", on_delete=models.PROTECT, null=True, blank=True, related_name="examples")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="examples")
    # The study's arm the writer was assigned to (study.arms; never changed) and the interface language it was
    # written in; null / "" outside a study.
    arm = models.ForeignKey("study.Arm", on_delete=models.PROTECT, null=True, blank=True, related_name="examples")
    language = models.CharField(max_length=10, blank=True, default="", db_default="")
    input = models.JSONField()
    target = models.JSONField()

    # Verdict: written only by the scoring service, never by a client.
    scoring_state = models.CharField(max_length=10, choices=Scoring.choices, default=Scoring.PENDING)
    fooled = models.BooleanField(null=True, blank=True)
    ensemble_prediction = models.JSONField(null=True, blank=True)
    model_predictions = models.JSONField(default=list, blank=True)
    explanation = models.JSONField(null=True, blank=True)
    model_versions = models.JSONField(default=list, blank=True)
    scoring_attempts = models.PositiveIntegerField(default=0)
    scoring_error = models.TextField(blank=True, default="")
    scored_at = models.DateTimeField(null=True, blank=True)
    # The scoring job could not be queued (the job queue was unreachable when the example was saved): the
    # example is pending, "scoring delayed", and the pending sweep queues it as soon as the queue is back.
    scoring_delayed = models.BooleanField(default=False, db_default=False)
    # The verdict comes first; its word map follows from a job on its own queue (annotation.scoring.explain_example).
    explanation_state = models.CharField(max_length=12, choices=Map.choices, blank=True, default="", db_default="")
    explanation_error = models.TextField(blank=True, default="", db_default="")
    explanation_queued_at = models.DateTimeField(null=True, blank=True)
    explanation_attempts = models.PositiveIntegerField(default=0, db_default=0)

    # Writer actions
    retracted = models.BooleanField(default=False)
    flagged = models.BooleanField(default=False)
    flag_reason = models.TextField(blank=True, default="")
    writer_explanation = models.TextField(blank=True, default="", help_text="why the writer thinks the model was wrong")
    # An appeal of a rejection to the experts (once per example); resolved by the next expert or owner vote.
    appeal_reason = models.TextField(blank=True, default="", db_default="")  # db_default: raw-SQL loaders (bench)
    appealed_at = models.DateTimeField(null=True, blank=True)
    appeal_resolved_at = models.DateTimeField(null=True, blank=True)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    # Provenance of the writing assistant (annotation.assistant): the suggestion request the writer had open when
    # submitting, and how the text relates to what it suggested. Decided by the server from the texts.
    suggestion = models.ForeignKey("annotation.Suggestion", on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="examples")
    assistance = models.CharField(max_length=12, choices=Assistance.choices, blank=True, default="", db_default="")
    suggested_text = models.TextField(blank=True, default="", db_default="", help_text="the suggestion it came from")
    edit_distance = models.PositiveIntegerField(null=True, blank=True, help_text="characters, from suggested_text")
    idempotency_key = models.CharField(max_length=100, null=True, blank=True)
    # SHA-256 of the normalised input the model reads (annotation.fingerprints.fingerprint): the duplicate check's
    # one indexed lookup. Set on save when empty; db_default for raw-SQL loaders (bench), which never check it.
    model_key = models.CharField(max_length=64, blank=True, default="", db_default="", editable=False)
    # True only on examples saved before the database held one example per model key (migration 0010) that repeat
    # an earlier example's key: kept as they are (nothing is deleted), outside the unique constraint below.
    key_shared = models.BooleanField(default=False, db_default=False, editable=False)
    metadata = models.JSONField(default=dict, blank=True)

    # Validation outcome, written by the consensus service (derived from Validation rows).
    consensus = models.CharField(max_length=12, choices=Consensus.choices, default=Consensus.UNVALIDATED)
    validated_label = models.JSONField(null=True, blank=True)
    # Dataset split, assigned once by the export service and never moved afterwards.
    split = models.CharField(max_length=5, choices=Split.choices, null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ExampleQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            # An idempotency key is the writer's, per task (annotation.services.submit looks it up in the
            # task): the same key on another task is another example. A unique constraint cannot reach the
            # task through the round, so the database holds it per round, where two racing retries meet
            # (both go to the task's one open round).
            models.UniqueConstraint(
                fields=["author", "round", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="example_idempotency_key_unique_per_author_round",
            ),
            # The duplicate rule's arbiter (annotation.duplicates): one live example per writer and model key.
            # Per round for the same reason as above (racing submissions meet in the task's one open round);
            # linked accounts' racing copies wait for a lock on the task and key (annotation.duplicates).
            models.UniqueConstraint(
                fields=["author", "round", "model_key"],
                condition=Q(retracted=False, key_shared=False) & ~Q(model_key=""),
                name="example_model_key_unique_per_author_round",
            ),
        ]
        indexes = [
            models.Index(fields=["round", "scoring_state"]),
            models.Index(fields=["model_key", "author"]),
            models.Index(fields=["round", "consensus", "fooled"]),
            models.Index(fields=["author", "created_at"]),
            models.Index(fields=["round", "split"]),
        ]

    def __str__(self) -> str:
        return f"Example {self.pk} ({self.round})"

    @property
    def task(self):
        return self.round.task

    def save(self, *args, **kwargs):
        if not self.model_key and self.round_id is not None:
            self.model_key = fingerprint(self.round.task, self.context.payload if self.context_id else None,
                                         self.input)
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "model_key"}
        super().save(*args, **kwargs)
