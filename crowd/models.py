"""The crowd app's records: qualification quizzes and their attempts, external worker batches, their
assignments and the accounts their workers sign into (one per task), the crowd platform's events about them
(crowd.lifecycle, crowd.platform), and badges (derived)."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Quiz(models.Model):
    """A short quiz that qualifies for one role on one task (writer or validator)."""

    class Role(models.TextChoices):
        ANNOTATOR = "annotator", _("Writer")
        VALIDATOR = "validator", _("Validator")

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="quizzes")
    role = models.CharField(max_length=10, choices=Role.choices)
    pass_mark = models.FloatField(default=0.8, help_text="the share of right answers that passes (0-1)")
    max_attempts = models.PositiveSmallIntegerField(default=3)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "role"], name="one_quiz_per_role")]

    def __str__(self) -> str:
        return f"{self.task.slug} {self.get_role_display().lower()} quiz"


class QuizItem(models.Model):
    """One question with a known answer. Without `proposed`: "which label is right?" (the answer is a
    label, or an answer text for QA). With `proposed`: "is this label right?" (the answer is correct or
    incorrect)."""

    quiz = models.ForeignKey(Quiz, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(default=0)
    context = models.JSONField(default=dict, blank=True)
    input = models.JSONField()
    proposed = models.JSONField(null=True, blank=True, help_text="a label to judge (validator questions)")
    answer = models.JSONField()
    explanation = models.TextField(blank=True, default="", help_text="shown after a passed attempt")
    source = models.CharField(max_length=60, blank=True, default="", help_text="where the owner chose it from")

    class Meta:
        ordering = ["quiz", "position", "id"]

    def __str__(self) -> str:
        return f"{self.quiz}: {str(self.input)[:40]}"


class QuizAttempt(models.Model):
    quiz = models.ForeignKey(Quiz, on_delete=models.CASCADE, related_name="attempts")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quiz_attempts")
    answers = models.JSONField(default=dict, help_text="item id -> the answer given")
    correct = models.PositiveIntegerField()
    total = models.PositiveIntegerField()
    score = models.FloatField()
    passed = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["quiz", "user"])]

    def __str__(self) -> str:
        return f"{self.user} {self.correct}/{self.total} on {self.quiz}"


def new_webhook_secret() -> str:
    return secrets.token_urlsafe(32)


class WorkerBatch(models.Model):
    """A batch of external worker links (Prolific, Mechanical Turk, ...) for one task: listed workers' own
    links and, where it has places left, one open link (crowd.lifecycle). Its end of the work is the owner's
    choice (`end_rule`): after `examples_required` examples, after `minutes_required` minutes, or whichever
    comes first."""

    class Source(models.TextChoices):
        PROLIFIC = "prolific", _("Prolific")
        MTURK = "mturk", _("Mechanical Turk")
        OTHER = "other", _("Other")

    class EndRule(models.TextChoices):
        EXAMPLES = "examples", _("after N examples")
        MINUTES = "minutes", _("after M minutes")
        FIRST = "first", _("whichever comes first")

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="worker_batches")
    name = models.CharField(max_length=200)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.PROLIFIC)
    examples_required = models.PositiveSmallIntegerField(default=3, help_text="examples before the completion code")
    completion_url = models.CharField(
        max_length=500, blank=True, default="",
        help_text="where to send the worker at the end; {code} is replaced by their completion code",
    )
    end_rule = models.CharField(max_length=10, choices=EndRule.choices, default=EndRule.EXAMPLES)
    minutes_required = models.PositiveIntegerField(null=True, blank=True,
                                                   help_text="minutes of work before the completion code")
    places = models.PositiveIntegerField(
        default=0, help_text="how many participants the batch pays for (listed workers hold one each); "
                             "returned, timed-out and screened-out participants free theirs")
    time_limit_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="a participant who has not finished this long after starting times out")
    study_id = models.CharField(max_length=100, blank=True, default="",
                                help_text="the platform's study id (Prolific STUDY_ID): checked on the open "
                                          "link, used to poll the platform's submissions")
    screen_out_url = models.CharField(max_length=500, blank=True, default="",
                                      help_text="where an ineligible, declining or withdrawing participant is sent "
                                                "back (no completion code)")
    webhook_secret = models.CharField(max_length=200, default=new_webhook_secret,
                                      help_text="the secret the platform signs its webhooks with")
    polled_at = models.DateTimeField(null=True, blank=True)
    poll_error = models.CharField(max_length=300, blank=True, default="")
    expires_at = models.DateTimeField()
    closed = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.task.slug}: {self.name}"

    @property
    def ends_by_examples(self) -> bool:
        return self.end_rule in (self.EndRule.EXAMPLES, self.EndRule.FIRST)

    @property
    def ends_by_minutes(self) -> bool:
        return self.end_rule in (self.EndRule.MINUTES, self.EndRule.FIRST) and bool(self.minutes_required)


class Assignment(models.Model):
    """One worker's assignment in a batch: its link signs them in once; its code proves completion. Listed
    workers' assignments are made with the batch (invited); the open link makes one when a participant takes
    a free place (active at once). Returned, timed-out and screened-out assignments hold no place, and their
    link signs nobody in; their examples are kept."""

    class State(models.TextChoices):
        INVITED = "invited", _("invited")
        ACTIVE = "active", _("active")
        COMPLETED = "completed", _("completed")
        RETURNED = "returned", _("returned")
        TIMED_OUT = "timed_out", _("timed out")
        SCREENED_OUT = "screened_out", _("screened out")

    batch = models.ForeignKey(WorkerBatch, on_delete=models.CASCADE, related_name="assignments")
    worker_id = models.CharField(max_length=100)
    assignment_id = models.CharField(max_length=100)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="assignments"
    )
    completion_code = models.CharField(max_length=32)
    followed_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.INVITED)
    via_open_link = models.BooleanField(default=False)
    submission_id = models.CharField(max_length=100, blank=True, default="",
                                     help_text="the platform's submission (Prolific SESSION_ID)")
    platform_status = models.CharField(max_length=40, blank=True, default="",
                                       help_text="the last submission status the platform reported")
    ended_at = models.DateTimeField(null=True, blank=True, help_text="when it was returned, timed out or screened out")

    HOLDING = (State.INVITED, State.ACTIVE, State.COMPLETED)  # states that hold a place
    ENDED = (State.RETURNED, State.TIMED_OUT, State.SCREENED_OUT)

    class Meta:
        ordering = ["batch", "id"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "assignment_id"], name="assignment_unique_in_batch"),
            models.UniqueConstraint(fields=["batch", "worker_id"], condition=models.Q(via_open_link=True),
                                    name="one_open_place_per_worker"),
        ]
        indexes = [models.Index(fields=["batch", "state"])]

    @property
    def ended(self) -> bool:
        return self.state in self.ENDED

    def __str__(self) -> str:
        return f"{self.worker_id}/{self.assignment_id}"


class WorkerAccount(models.Model):
    """Which account an external worker id signs into, per task: one account per (task, source, worker id),
    made when the worker first follows a link of one of the task's batches, and never reachable from another
    task (`user` is one-to-one). Worker ids are public (usernames, the recruiting platform), so a lookup by
    (source, worker id) alone would let any owner sign in as another task's worker by listing their id in a
    batch of their own (`crowd.links.worker_account`)."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=10, choices=WorkerBatch.Source.choices)
    worker_id = models.CharField(max_length=100)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worker_account")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "source", "worker_id"], name="one_account_per_worker_and_task"),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.worker_id} on {self.task_id}"


class PlatformEvent(models.Model):
    """An event the crowd platform reported about a batch (a webhook, or a change the polling found), kept
    once per event id: a repeated delivery is answered "already processed" and changes nothing."""

    class Channel(models.TextChoices):
        WEBHOOK = "webhook", _("webhook")
        POLL = "poll", _("polling")

    batch = models.ForeignKey(WorkerBatch, on_delete=models.CASCADE, related_name="events")
    event_id = models.CharField(max_length=200)
    event_type = models.CharField(max_length=60)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    participant_id = models.CharField(max_length=100, blank=True, default="")
    submission_id = models.CharField(max_length=100, blank=True, default="")
    status = models.CharField(max_length=40, blank=True, default="")
    outcome = models.CharField(max_length=200, blank=True, default="", help_text="what it changed here")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["batch", "event_id"], name="platform_event_once")]

    def __str__(self) -> str:
        return f"{self.batch_id} {self.event_type} {self.status} ({self.event_id})"


class Badge(models.Model):
    """A badge someone holds on a task: derived from the data by `crowd.badges.derive` (a periodic job),
    which adds the ones earned and removes the ones no longer earned."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="badges")
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    code = models.CharField(max_length=40)
    detail = models.CharField(max_length=200, blank=True, default="")
    awarded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "code"]
        constraints = [models.UniqueConstraint(fields=["user", "task", "code"], name="one_badge_per_code")]

    def __str__(self) -> str:
        return f"{self.user} {self.code} on {self.task_id}"
