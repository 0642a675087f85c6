"""The round pipeline's state (runs and their steps) and researcher uploads."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

# A run in any of these states holds the task's one slot (the database allows one unfinished run per task):
# "awaiting" is a run stopped before deploying a new ensemble worse than the live one, until its owner approves
# or discards it; abandoning a run frees the slot.
UNFINISHED = ("pending", "running", "failed", "awaiting")


class PipelineRun(models.Model):
    """One "close this round, open the next" job. At most one unfinished run per task (database constraint)."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Waiting to start")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed (can be retried)")
        AWAITING = "awaiting", _("Awaiting approval")
        ABANDONED = "abandoned", _("Abandoned")

    class Decision(models.TextChoices):
        NONE = "", _("Not asked")
        APPROVED = "approved", _("Approved: deploy the new ensemble")
        DISCARDED = "discarded", _("Discarded: keep the live ensemble")

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="pipeline_runs")
    from_round = models.ForeignKey(
        "tasks.Round", on_delete=models.SET_NULL, null=True, blank=True, related_name="closing_runs"
    )
    to_round = models.ForeignKey(
        "tasks.Round", on_delete=models.SET_NULL, null=True, blank=True, related_name="opening_runs"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    options = models.JSONField(default=dict, blank=True, help_text="training and seeding options, fixed at start")
    members = models.JSONField(
        null=True, blank=True, default=None,
        help_text="model version ids of the next round's ensemble, fixed the first time a step needs them",
    )
    description = models.CharField(max_length=500, blank=True, default="")
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    error = models.TextField(blank=True, default="")
    runner = models.CharField(max_length=20, blank=True, default="", help_text="how it was started")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    comparison = models.JSONField(
        null=True, blank=True, default=None,
        help_text="the new ensemble against the live one on every test set (rounds.evaluation.compare_ensembles)",
    )
    decision = models.CharField(max_length=10, choices=Decision.choices, blank=True, default="")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["task"], condition=Q(status__in=UNFINISHED), name="one_unfinished_pipeline_per_task"
            )
        ]

    def __str__(self) -> str:
        return f"pipeline {self.pk} for {self.task} ({self.status})"

    @property
    def seconds(self) -> float | None:
        if self.started_at is None:
            return None
        return ((self.finished_at or timezone.now()) - self.started_at).total_seconds()


class PipelineStep(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        RUNNING = "running", _("Running")
        WAITING = "waiting", _("Awaiting approval")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    run = models.ForeignKey(PipelineRun, on_delete=models.CASCADE, related_name="steps")
    name = models.CharField(max_length=40)
    position = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    progress = models.FloatField(default=0.0, help_text="0..1")
    message = models.CharField(max_length=300, blank=True, default="")
    log = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    result = models.JSONField(default=dict, blank=True, help_text="what the step produced (ids, counts)")
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="pipeline_step_once_per_run")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def seconds(self) -> float | None:
        if self.started_at is None:
            return None
        return ((self.finished_at or timezone.now()) - self.started_at).total_seconds()


class ResearcherModel(models.Model):
    """A model a researcher uploaded (weights only). Evaluated by a worker, listed on the leaderboard."""

    class Status(models.TextChoices):
        EVALUATING = "evaluating", _("Evaluating")
        EVALUATED = "evaluated", _("Evaluated")
        FAILED = "failed", _("Evaluation failed")
        ABANDONED = "abandoned", _("Abandoned")

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="researcher_models")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    architecture = models.CharField(max_length=100, blank=True, default="")
    files = models.JSONField(default=list, help_text="[name, bytes] as stored")
    size_bytes = models.BigIntegerField(default=0)
    model_version = models.OneToOneField(
        "modelzoo.ModelVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="upload"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.EVALUATING)
    error = models.TextField(blank=True, default="")
    in_next_ensemble = models.BooleanField(default=False, help_text="the owner added it to the next round's ensemble")
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True, help_text="when its evaluation was last queued")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} by {self.uploaded_by} ({self.status})"


class PredictionUpload(models.Model):
    """Predictions a researcher uploaded for a task's public test sets (JSONL keyed by example id), in place of a
    model: validated row by row against the task's output, scored on what predictions allow (the kind's metrics,
    never throughput or memory), and ranked on the leaderboard with a "predictions only" mark
    (`rounds.predictions`)."""

    class Status(models.TextChoices):
        SCORING = "scoring", _("Scoring")
        SCORED = "scored", _("Scored")
        REJECTED = "rejected", _("Rejected")  # no row could be used: the report says why, row by row

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="prediction_uploads")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    filename = models.CharField(max_length=200, blank=True, default="")
    rows = models.PositiveIntegerField(default=0, help_text="lines read from the file")
    accepted = models.PositiveIntegerField(default=0, help_text="rows that passed validation")
    report = models.JSONField(default=dict, blank=True,
                              help_text="the row-level validation report: {errors: [{line, id, field, message}], ...}")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SCORING)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"predictions {self.name} by {self.uploaded_by} ({self.status})"


class PredictionScore(models.Model):
    """An uploaded prediction file's figures on one test set, with its own status: a set the file covers fully is
    scored; one it covers in part or not at all says so (`missing` ids are counted, never guessed)."""

    class Status(models.TextChoices):
        SCORED = "scored", _("Scored")
        INCOMPLETE = "incomplete", _("Incomplete")  # some of the set's ids have no prediction: not ranked on it
        MISSING = "missing", _("No predictions")

    upload = models.ForeignKey(PredictionUpload, on_delete=models.CASCADE, related_name="scores")
    dataset = models.CharField(max_length=300)
    size = models.PositiveIntegerField(default=0, help_text="the set's rows when it was scored")
    covered = models.PositiveIntegerField(default=0, help_text="the set's rows the file predicts")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.MISSING)
    metrics = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["upload", "dataset"]
        constraints = [models.UniqueConstraint(fields=["upload", "dataset"], name="prediction_score_unique")]

    def __str__(self) -> str:
        return f"{self.upload.name} on {self.dataset}: {self.status}"


class DataMap(models.Model):
    """Training dynamics of one model trained for a round (Swayamdipta et al. 2020, dataset cartography): for each
    training example, the mean probability of its gold label over the checkpoints (confidence), the standard
    deviation of that probability (variability) and the share of checkpoints that predicted it right
    (correctness), with its region — easy-to-learn, ambiguous or hard-to-learn (`rounds.datamaps`)."""

    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="data_maps")
    model_version = models.ForeignKey("modelzoo.ModelVersion", on_delete=models.SET_NULL, null=True, blank=True,
                                      related_name="data_maps")
    checkpoints = models.PositiveSmallIntegerField(default=0, help_text="checkpoints the statistics are over")
    entries = models.JSONField(default=list, blank=True,
                               help_text="[{key, confidence, variability, correctness, region}] per training example")
    counts = models.JSONField(default=dict, blank=True, help_text="examples per region")
    settings = models.JSONField(default=dict, blank=True, help_text="how the regions were cut (thresholds)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round", "-created_at"]

    def __str__(self) -> str:
        return f"data map of {self.round} ({self.checkpoints} checkpoints, {len(self.entries)} examples)"
