"""The registry: model versions (one per artifact), ensembles per round, evaluations per model x dataset,
ensemble scores per round x dataset, and each model's measured throughput and memory.

Status changes go through `modelzoo.services.transition`, which enforces `ALLOWED_TRANSITIONS`.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from zoo.heads import head_choices


class ModelVersion(models.Model):
    class Status(models.TextChoices):
        TRAINING = "training", _("Training")
        READY = "ready", _("Ready")
        DEPLOYED = "deployed", _("Deployed (in a round's ensemble)")
        FAILED = "failed", _("Failed")
        RETIRED = "retired", _("Retired")

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="model_versions")
    version = models.PositiveIntegerField(help_text="per task, counting up")
    name = models.CharField(max_length=100)
    head = models.CharField(max_length=20, choices=head_choices())  # a registered head (zoo.heads)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.TRAINING)
    artifact = models.CharField(max_length=500, blank=True, default="", help_text="folder, relative to MODEL_STORE")
    fingerprint = models.CharField(max_length=64, blank=True, default="", help_text="data + settings; reuse key")
    lineage = models.JSONField(default=dict, blank=True, help_text="the data it was trained on: collections, rounds")
    hyperparameters = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=dict, blank=True, help_text="training metrics")
    progress = models.FloatField(default=0.0, help_text="0..1 while training")
    progress_message = models.CharField(max_length=200, blank=True, default="")
    error = models.TextField(blank=True, default="")
    parent = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["task", "version"]
        constraints = [models.UniqueConstraint(fields=["task", "version"], name="model_version_unique_per_task")]
        indexes = [models.Index(fields=["task", "status"]), models.Index(fields=["fingerprint"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def artifact_path(self) -> Path:
        return Path(settings.MODEL_STORE) / self.artifact

    @property
    def serving_name(self) -> str:
        """The model's name on TorchServe (letters, digits, - and _)."""
        return f"{self.task.slug}-v{self.version}".replace(".", "-")


class Ensemble(models.Model):
    """The models in the loop for a round. One active ensemble per round; old ones are kept as history."""

    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="ensembles")
    # The strategies are in zoo.aggregation; the help text is kept as migrated (no migration for a moved module).
    strategy = models.CharField(max_length=40, help_text="aggregation strategy (modelzoo.aggregation)")
    active = models.BooleanField(default=True)
    members = models.ManyToManyField(ModelVersion, through="EnsembleMember", related_name="ensembles")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["round"], condition=Q(active=True), name="one_active_ensemble_per_round")
        ]

    def __str__(self) -> str:
        return f"ensemble {self.pk} for {self.round}"

    def ordered_members(self) -> list[ModelVersion]:
        return [m.model_version for m in self.memberships.select_related("model_version__task").order_by("position")]


class EnsembleMember(models.Model):
    ensemble = models.ForeignKey(Ensemble, on_delete=models.CASCADE, related_name="memberships")
    model_version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="memberships")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["ensemble", "position"]
        constraints = [models.UniqueConstraint(fields=["ensemble", "model_version"], name="member_once_per_ensemble")]


class Evaluation(models.Model):
    """Metrics of one model version on one labelled set (e.g. "demo/test", "round-1/test", "jsonl:<file>")."""

    model_version = models.ForeignKey(ModelVersion, on_delete=models.CASCADE, related_name="evaluations")
    dataset = models.CharField(max_length=300)
    size = models.PositiveIntegerField()
    metrics = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model_version", "dataset"]
        constraints = [models.UniqueConstraint(fields=["model_version", "dataset"], name="evaluation_unique")]

    def __str__(self) -> str:
        return f"{self.model_version.name} on {self.dataset}: {self.metrics}"


class ModelMeasurement(models.Model):
    """Throughput and memory of a model version, measured while it was evaluated."""

    model_version = models.OneToOneField(
        ModelVersion, on_delete=models.CASCADE, primary_key=True, related_name="measurement"
    )
    examples = models.PositiveIntegerField(default=0, help_text="examples predicted in the measurement")
    seconds = models.FloatField(default=0.0)
    throughput = models.FloatField(help_text="examples per second, one model on this machine")
    memory_mb = models.FloatField(help_text="weights held in memory (parameters and buffers), MB")
    measured_at = models.DateTimeField(auto_now=True)


class EnsembleScore(models.Model):
    """Metrics of the ensemble a round used (or will use) on one labelled set, e.g. round 1's ensemble on round-2/test."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="ensemble_scores")
    round_number = models.PositiveIntegerField(help_text="the round whose ensemble this is")
    dataset = models.CharField(max_length=300)
    members = models.JSONField(default=list, help_text="model version ids")
    size = models.PositiveIntegerField()
    metrics = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["task", "round_number", "dataset"]
        constraints = [
            models.UniqueConstraint(fields=["task", "round_number", "dataset"], name="ensemble_score_unique")
        ]
