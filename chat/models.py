"""The chat kind's records (docs/chat.md): a conversation of one writer with blinded target models, each message
stored as it happens, the writer's ratings and pairwise choices, the answers marked as failing, and validators'
judgements of them.

A conversation belongs to the task's open round. Targets are named in `Conversation.targets` in slot order (slot 0
is shown as "Model A"); the target's settings at the time are kept in `Conversation.target_settings`, so the dataset
card says what answered even after the task's settings change.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q


class Conversation(models.Model):
    class Scale(models.TextChoices):
        SLIDER = "slider", "Each answer rated 0-100"
        PAIRWISE = "pairwise", "Two answers side by side, the better one chosen"

    class State(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Finished"

    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="conversations")
    writer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    scale = models.CharField(max_length=10, choices=Scale.choices)
    blinded = models.BooleanField(default=True)
    # target names in slot order: slot 0 is "Model A"
    targets = models.JSONField(default=list)
    # {name: {"provider", "model", "system_prompt", "temperature", "max_tokens", "seed"}} when the conversation began
    target_settings = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=8, choices=State.choices, default=State.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["writer", "created_at"]), models.Index(fields=["round", "state"])]

    def __str__(self) -> str:
        return f"Conversation {self.pk} ({self.state})"


class Message(models.Model):
    """One message: the writer's (role user, one per turn) or a target's answer (role assistant, one per slot
    answering that turn). An answer is stored pending before any model is called, and becomes ready or failed."""

    class Role(models.TextChoices):
        USER = "user", "Writer"
        ASSISTANT = "assistant", "Model"

    class State(models.TextChoices):
        PENDING = "pending", "Writing"
        READY = "ready", "Ready"
        FAILED = "failed", "Unavailable"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    turn = models.PositiveSmallIntegerField(help_text="the exchange number, from 0")
    role = models.CharField(max_length=10, choices=Role.choices)
    slot = models.PositiveSmallIntegerField(null=True, blank=True, help_text="assistant: the blinded slot")
    target = models.CharField(max_length=40, blank=True, default="", help_text="assistant: the target's name")
    text = models.TextField(blank=True, default="")
    state = models.CharField(max_length=8, choices=State.choices, default=State.READY)
    error = models.TextField(blank=True, default="", help_text="why there is no answer, for people")
    attempts = models.PositiveSmallIntegerField(default=0)
    # the answer the conversation continues with (slider: the only one; pairwise: the chosen one, or slot 0 on a tie)
    chosen = models.BooleanField(default=False)
    model = models.CharField(max_length=200, blank=True, default="", help_text="the provider's name for the model")
    usage = models.JSONField(default=dict, blank=True, help_text="tokens in and out, seconds, calls")
    created_at = models.DateTimeField(auto_now_add=True)
    ready_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["conversation_id", "turn", "role", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "turn"], condition=Q(role="user"),
                                    name="chat_one_user_message_per_turn"),
            models.UniqueConstraint(fields=["conversation", "turn", "slot"], condition=Q(role="assistant"),
                                    name="chat_one_answer_per_slot_and_turn"),
        ]
        indexes = [models.Index(fields=["state", "created_at"])]

    def __str__(self) -> str:
        return f"Message {self.pk} ({self.role} turn {self.turn})"


class Rating(models.Model):
    """The writer's rating of one answer on the 0-100 scale."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="ratings")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_ratings")
    score = models.PositiveSmallIntegerField(validators=[MinValueValidator(0), MaxValueValidator(100)])
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "rater"], name="chat_one_rating_per_rater")]


class Preference(models.Model):
    """The writer's pairwise choice at one turn: the better slot, or a tie (`winner_slot` null)."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="preferences")
    turn = models.PositiveSmallIntegerField()
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_preferences")
    winner_slot = models.PositiveSmallIntegerField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["conversation", "turn", "rater"],
                                               name="chat_one_preference_per_turn")]


class Failure(models.Model):
    """An answer the writer marked as failing: the chat kind's example. Validators judge it (`Judgement`);
    `consensus` is what their judgements decide (or an expert's override)."""

    class Consensus(models.TextChoices):
        UNVALIDATED = "unvalidated", "Not yet decided"
        CONFIRMED = "confirmed", "Confirmed failure"
        REJECTED = "rejected", "Not a failure"
        DISPUTED = "disputed", "Disputed (sent to experts)"

    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="failure")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_failures")
    category = models.CharField(max_length=40)
    reason = models.TextField()
    consensus = models.CharField(max_length=12, choices=Consensus.choices, default=Consensus.UNVALIDATED)
    decided_category = models.CharField(max_length=40, blank=True, default="")
    decided_by_expert = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["consensus", "created_at"])]

    def __str__(self) -> str:
        return f"Failure {self.pk} ({self.category}, {self.consensus})"


class Judgement(models.Model):
    """A validator's (or an expert's) judgement of a marked answer: is it a failure, of which category, and the
    answer's rating on the task's scale."""

    class Verdict(models.TextChoices):
        CONFIRMED = "confirmed", "It fails"
        NOT_A_FAILURE = "not_a_failure", "It does not fail"
        UNUSABLE = "unusable", "Unusable (cannot be judged)"

    failure = models.ForeignKey(Failure, on_delete=models.CASCADE, related_name="judgements")
    judge = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_judgements")
    verdict = models.CharField(max_length=14, choices=Verdict.choices)
    category = models.CharField(max_length=40, blank=True, default="")
    rating = models.PositiveSmallIntegerField(null=True, blank=True,
                                              validators=[MinValueValidator(0), MaxValueValidator(100)])
    reason = models.TextField(blank=True, default="")
    expert = models.BooleanField(default=False, help_text="an expert's or owner's override")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["failure", "judge"], name="chat_one_judgement_per_judge")]
