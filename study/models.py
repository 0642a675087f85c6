"""A task's study: the consent people sign (versioned), the surveys before and after the work, the randomised arms
and each participant's record (arm, language, eligibility, withdrawal), and the owner's translations of the task's
texts. docs/study.md is the guide; the rules live in `study.consent`, `study.surveys`, `study.arms`, `study.gate`
and `study.texts`."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Study(models.Model):
    """A task's study settings: one per task, made when the owner first sets one up. Without one (or with
    `enabled` false) a task has no consent, surveys or arms: its people work as before."""

    class Assignment(models.TextChoices):
        BALANCED = "balanced", "Balanced (permuted blocks)"
        RANDOM = "random", "Simple random"

    task = models.OneToOneField("tasks.Task", on_delete=models.CASCADE, related_name="study")
    enabled = models.BooleanField(default=False)
    seed = models.PositiveIntegerField(default=0, help_text="the assignment's random seed (recorded)")
    assignment = models.CharField(max_length=10, choices=Assignment.choices, default=Assignment.BALANCED)
    languages = models.JSONField(default=list, blank=True, help_text="the languages participants may choose")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"study of {self.task_id}"


class Consent(models.Model):
    """One version of a task's consent text (Markdown, written by the owner). A new text is a new version:
    earlier versions are kept, so each record says exactly what was agreed to."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="consents")
    version = models.PositiveIntegerField()
    text = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "-version"]
        constraints = [models.UniqueConstraint(fields=["task", "version"], name="consent_version_unique")]

    def __str__(self) -> str:
        return f"{self.task_id} consent v{self.version}"


class ConsentRecord(models.Model):
    """A person's consent to one version, and its withdrawal (kept: the study's records need both)."""

    consent = models.ForeignKey(Consent, on_delete=models.PROTECT, related_name="records")
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="consent_records")
    version = models.PositiveIntegerField()
    language = models.CharField(max_length=10, blank=True, default="")
    agreed_at = models.DateTimeField(auto_now_add=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["task", "agreed_at"]
        constraints = [models.UniqueConstraint(fields=["consent", "user"], name="one_record_per_consent_and_user")]
        indexes = [models.Index(fields=["task", "user"])]

    def __str__(self) -> str:
        return f"{self.user_id} v{self.version} on {self.task_id}"


class Survey(models.Model):
    """A questionnaire before (`pre`) or after (`post`) the work."""

    class Phase(models.TextChoices):
        PRE = "pre", "Before the work"
        POST = "post", "After the work"

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="surveys")
    phase = models.CharField(max_length=4, choices=Phase.choices)
    title = models.CharField(max_length=200, blank=True, default="")
    intro = models.TextField(blank=True, default="")
    active = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["task", "phase"]
        constraints = [models.UniqueConstraint(fields=["task", "phase"], name="one_survey_per_phase")]

    def __str__(self) -> str:
        return f"{self.task_id} {self.phase}-survey"


class Question(models.Model):
    """One question: single or multiple choice, Likert, number or free text; required or optional; with an
    optional eligibility rule (`study.surveys`: which answers let a person go on)."""

    class Kind(models.TextChoices):
        SINGLE = "single", "Single choice"
        MULTIPLE = "multiple", "Multiple choice"
        LIKERT = "likert", "Likert scale"
        NUMBER = "number", "Number"
        TEXT = "text", "Free text"

    survey = models.ForeignKey(Survey, on_delete=models.CASCADE, related_name="questions")
    key = models.SlugField(max_length=40, help_text="the answer's column in exports")
    position = models.PositiveSmallIntegerField(default=0)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    text = models.TextField()
    choices = models.JSONField(default=list, blank=True, help_text="the options (choice and Likert questions)")
    required = models.BooleanField(default=True)
    settings = models.JSONField(default=dict, blank=True, help_text="min / max (number), max_length (text)")
    eligibility = models.JSONField(null=True, blank=True, help_text="which answers are eligible (study.surveys)")

    class Meta:
        ordering = ["survey", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["survey", "key"], name="question_key_unique_in_survey")]

    def __str__(self) -> str:
        return f"{self.survey}: {self.key}"


class SurveyResponse(models.Model):
    """A person's answers to one survey (one response each), and whether they made the person eligible."""

    survey = models.ForeignKey(Survey, on_delete=models.CASCADE, related_name="responses")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="survey_responses")
    answers = models.JSONField(default=dict, help_text="question key -> answer")
    eligible = models.BooleanField(default=True)
    language = models.CharField(max_length=10, blank=True, default="")
    submitted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["survey", "submitted_at"]
        constraints = [models.UniqueConstraint(fields=["survey", "user"], name="one_response_per_survey")]

    def __str__(self) -> str:
        return f"{self.user_id} on {self.survey}"


class Arm(models.Model):
    """One condition of a randomised comparison: the writing assistant on or off, the model in the loop or none
    (standard collection: the writer sees no verdict, the example is scored all the same), or another target
    ensemble. `weight` is the arm's share of assignments (1:1 by default)."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="arms")
    key = models.SlugField(max_length=40)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    assistant = models.BooleanField(default=True, help_text="the writing assistant is offered (where the task has one)")
    model_in_loop = models.BooleanField(default=True, help_text="the writer sees the models' answers and the verdict")
    ensemble = models.ForeignKey("modelzoo.Ensemble", on_delete=models.PROTECT, null=True, blank=True,
                                 related_name="+", help_text="another target ensemble (none: the round's live one)")
    weight = models.PositiveSmallIntegerField(default=1)
    position = models.PositiveSmallIntegerField(default=0)
    active = models.BooleanField(default=True, help_text="new participants may be assigned to it")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["task", "key"], name="arm_key_unique_in_task")]

    def __str__(self) -> str:
        return f"{self.task_id}/{self.key}"


class Participant(models.Model):
    """A person in a task's study: their arm (assigned once at random, never changed), their language, whether
    they are eligible, and when they withdrew. `sequence` is the assignment's order (the seeded schedule's index)."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="participants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participations")
    arm = models.ForeignKey(Arm, on_delete=models.PROTECT, null=True, blank=True, related_name="participants")
    sequence = models.PositiveIntegerField(null=True, blank=True)
    language = models.CharField(max_length=10, blank=True, default="")
    eligible = models.BooleanField(null=True, blank=True, help_text="null: not screened (no pre-survey rules)")
    joined_at = models.DateTimeField(auto_now_add=True)
    assigned_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["task", "id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "user"], name="one_participant_per_task_and_user"),
            models.UniqueConstraint(fields=["task", "sequence"], name="assignment_sequence_unique_in_task"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} on {self.task_id} ({self.arm_id})"


class TextTranslation(models.Model):
    """The owner's translation of one of a task's texts into one language. `field` names the text:
    `instructions`, `guidelines`, `consent`, `survey:<phase>:title`, `survey:<phase>:intro`,
    `question:<phase>:<key>`, `question:<phase>:<key>:choices` (a JSON list), `label:<label>` (study.texts)."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="translations")
    language = models.CharField(max_length=10)
    field = models.CharField(max_length=120)
    text = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["task", "language", "field"]
        constraints = [models.UniqueConstraint(fields=["task", "language", "field"], name="one_text_per_language")]

    def __str__(self) -> str:
        return f"{self.task_id} {self.language} {self.field}"
