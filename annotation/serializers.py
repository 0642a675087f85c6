"""API shapes of the create flow. Verdict fields are read-only: only the scoring service writes them."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Example, Suggestion
from annotation.services import Submission
from dynabench_site.serializers import FieldsBuiltOnce
from tasks.kinds.verdict import hidden_record
from tasks.models import Context

VERDICT_FIELDS = (
    "scoring_state", "fooled", "ensemble_prediction", "model_predictions", "explanation", "model_versions",
    "scoring_attempts", "scoring_error", "scored_at", "scoring_delayed", "explanation_state", "explanation_error",
)


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, naming each (a client cannot smuggle in `fooled`)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["the body must be a JSON object"]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: [self.unknown_message(name)] for name in unknown})
        return super().to_internal_value(data)

    def unknown_message(self, name: str) -> str:
        if name in VERDICT_FIELDS or name in {"verdict", "retracted", "consensus"}:
            return "is decided by the server and cannot be set by a client"
        return f"is not an accepted field; accepted: {', '.join(self.fields)}"


class SubmissionSerializer(StrictSerializer):
    context_id = serializers.IntegerField(required=False, allow_null=True, help_text="the shown context")
    input = serializers.JSONField(help_text='shaped by the task kind: {"text"}, {"hypothesis"} or {"question"}')
    target = serializers.JSONField(help_text='a label, or for QA the highlighted answer {"text", "start"}')
    idempotency_key = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=100,
        help_text="a retry with the same key returns the first example instead of creating another",
    )
    round = serializers.IntegerField(required=False, allow_null=True, help_text="the round the page showed")
    time_spent_ms = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    suggestion_id = serializers.IntegerField(
        required=False, allow_null=True, help_text="the writing assistant's suggestions the writer had open (provenance)")
    suggestion_choice = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=20,
        help_text="the index of the suggestion the writer took (edited or not)")
    word_map = serializers.BooleanField(
        required=False, default=True,
        help_text="false: the verdict alone, no word map after it (a client that shows none; its state says 'unavailable')")
    next_context = serializers.BooleanField(
        required=False, default=False,
        help_text="true: the answer carries the next context to write about (`next_context`), so a writer who moves "
                  "on needs no second request")

    def submission(self) -> Submission:
        data = self.validated_data
        return Submission(
            input=data["input"], target=data["target"], context_id=data.get("context_id"),
            round_number=data.get("round"), idempotency_key=data.get("idempotency_key"),
            time_spent_ms=data.get("time_spent_ms"), suggestion_id=data.get("suggestion_id"),
            suggestion_choice=data.get("suggestion_choice"),
        )


class ReasonSerializer(StrictSerializer):
    reason = serializers.CharField(allow_blank=True, trim_whitespace=False, help_text="why the example is flagged")


class ExplanationSerializer(StrictSerializer):
    writer_explanation = serializers.CharField(
        allow_blank=True, trim_whitespace=False, help_text="why the writer thinks the model was wrong"
    )


class ContextSerializer(FieldsBuiltOnce, serializers.ModelSerializer):
    round = serializers.SerializerMethodField()

    class Meta:
        model = Context
        fields = ["id", "payload", "round", "is_seed", "hardness_score", "times_used"]

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_round(self, context: Context) -> int | None:
        return context.round.number if context.round_id else None


# What a writer in a study arm without the model in the loop reads instead of the verdict (study.arms): "saved".
HIDDEN_VERDICT = {**hidden_record(), "explanation": None,
                  "model_versions": [], "explanation_state": "unavailable", "explanation_error": ""}


class ExampleSerializer(FieldsBuiltOnce, serializers.ModelSerializer):
    """With `context={"hide_verdict": True}` (the writer's study arm has no model in the loop), the verdict's fields
    are empty and `verdict_hidden` is true: the example is saved and scored, its writer is not told how."""

    task = serializers.CharField(source="round.task.slug", read_only=True)
    round = serializers.IntegerField(source="round.number", read_only=True)
    context_id = serializers.IntegerField(read_only=True, allow_null=True)
    context = serializers.SerializerMethodField()
    links = serializers.SerializerMethodField(help_text="the example's own address and its writer's actions")

    class Meta:
        model = Example
        fields = [
            "id", "task", "round", "context_id", "context", "input", "target", *VERDICT_FIELDS,
            "retracted", "flagged", "flag_reason", "writer_explanation", "time_spent_ms", "idempotency_key",
            "consensus", "created_at", "assistance", "suggestion_id", "edit_distance", "links", "verdict_hidden",
        ]
        read_only_fields = fields

    verdict_hidden = serializers.SerializerMethodField(
        help_text="true: the writer's study arm collects without the model in the loop, so the verdict is not shown to "
                  "them (the example is saved and scored; its owners see the verdict)")

    @extend_schema_field(serializers.BooleanField())
    def get_verdict_hidden(self, example: Example) -> bool:
        return bool(self.context.get("hide_verdict"))

    def to_representation(self, example: Example) -> dict[str, Any]:
        data = super().to_representation(example)
        if data["verdict_hidden"]:
            data.update(HIDDEN_VERDICT)
        return data

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_context(self, example: Example) -> dict | None:
        return example.context.payload if example.context_id else None

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_links(self, example: Example) -> dict[str, str]:
        return {name: reverse(route, args=[example.pk]) for name, route in EXAMPLE_LINKS.items()}


class SuggestionRequestSerializer(StrictSerializer):
    context_id = serializers.IntegerField(required=False, allow_null=True, help_text="the shown context")
    target = serializers.JSONField(help_text="the label the writer intends")
    round = serializers.IntegerField(required=False, allow_null=True, help_text="the round the page showed")


class SuggestionCandidateSerializer(serializers.Serializer):
    text = serializers.CharField()
    models_disagree = serializers.SerializerMethodField(help_text=(
        "whether the live ensemble's answer differs from the label asked for (the request's `target`); the text's "
        "true label is unchecked, so it fools the models only if a reader agrees it has that label (null: no "
        "verdict, see verdict_error)"))
    ensemble_prediction = serializers.DictField(required=False, allow_null=True)
    model_predictions = serializers.ListField(child=serializers.DictField(), required=False)
    verdict_error = serializers.CharField(required=False)

    @extend_schema_field(serializers.BooleanField(allow_null=True))
    def get_models_disagree(self, candidate: dict) -> bool | None:
        # requests stored before issue 39 called it "fooled" (the same comparison, wrongly named)
        return candidate.get("models_disagree", candidate.get("fooled"))


class SuggestionSerializer(serializers.ModelSerializer):
    round = serializers.IntegerField(source="round.number", read_only=True)
    candidates = SuggestionCandidateSerializer(many=True, read_only=True)
    link = serializers.SerializerMethodField(help_text="poll this address until `state` is ready or failed")

    class Meta:
        model = Suggestion
        fields = ["id", "round", "context_id", "target", "state", "error", "provider", "model", "candidates",
                  "shots", "usage", "created_at", "ready_at", "link"]
        read_only_fields = fields

    @extend_schema_field(serializers.CharField())
    def get_link(self, suggestion: Suggestion) -> str:
        return reverse("api-suggestion-detail", args=[suggestion.pk])


EXAMPLE_LINKS = {
    "self": "api-example-detail",
    "score": "api-example-score",
    "retract": "api-example-retract",
    "flag": "api-example-flag",
    "explanation": "api-example-explanation",
    "word_map": "api-example-word-map",
    "appeal": "api-example-appeal",
}


class FlagReasonsSerializer(serializers.Serializer):
    yours = serializers.CharField(allow_null=True, help_text="your own flag's reason")
    validators = serializers.ListField(child=serializers.CharField(), help_text="validators' reasons (anonymous)")


class AppealStateSerializer(serializers.Serializer):
    allowed = serializers.BooleanField(help_text="you may appeal now (rejected or flagged, not appealed before)")
    reason = serializers.CharField(allow_null=True)
    appealed_at = serializers.DateTimeField(allow_null=True)
    resolved_at = serializers.DateTimeField(allow_null=True, help_text="when an expert decided after your appeal")


class ValidationStateSerializer(serializers.Serializer):
    state = serializers.CharField(help_text="decided, waiting, out_of_scope (never validated: e.g. it did not fool "
                                            "the models and the task validates fooling examples only), round_closed, "
                                            "scoring, not_scored or retracted")
    text = serializers.CharField(help_text="the same, in words")
    votes = serializers.IntegerField(help_text="crowd votes so far")


class MyExampleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    task_name = serializers.CharField()
    round = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    context = serializers.DictField(allow_null=True)
    input = serializers.DictField()
    target = serializers.JSONField()
    scoring_state = serializers.CharField()
    fooled = serializers.BooleanField(allow_null=True, help_text="the model's verdict: fooled or not")
    model_prediction = serializers.JSONField(allow_null=True)
    verdict_hidden = serializers.BooleanField(help_text="written in a study arm without the model in the loop: the "
                                                        "verdict is not shown to its writer")
    retracted = serializers.BooleanField()
    consensus = serializers.ChoiceField(choices=Example.Consensus.choices, help_text="the validation outcome")
    outcome = serializers.CharField(help_text="the validation outcome in words")
    validation = ValidationStateSerializer(help_text="where the example stands in validation, and whether it ever will be validated")
    corrected_label = serializers.JSONField(allow_null=True, help_text="the label validators settled on, if they rejected yours")
    flag_reasons = FlagReasonsSerializer()
    appeal = AppealStateSerializer()
    links = serializers.DictField(child=serializers.CharField())


class AppealSerializer(StrictSerializer):
    reason = serializers.CharField(allow_blank=True, trim_whitespace=False, help_text="why the rejection is wrong")


class SandboxVerdictSerializer(serializers.Serializer):
    sandbox = serializers.BooleanField()
    round = serializers.IntegerField()
    context_id = serializers.IntegerField(allow_null=True)
    input = serializers.DictField()
    target = serializers.JSONField()
    fooled = serializers.BooleanField()
    ensemble_prediction = serializers.DictField()
    model_predictions = serializers.ListField(child=serializers.DictField())
    explanation = serializers.DictField(allow_null=True)
    model_versions = serializers.ListField(child=serializers.IntegerField())


class WriterFiguresSerializer(serializers.Serializer):
    collected = serializers.IntegerField(help_text="examples that count (not retracted)")
    fooled = serializers.IntegerField(allow_null=True, help_text="null for a writer in a study arm without the model "
                                                                 "in the loop (no verdicts shown)")
    verified_fooled = serializers.IntegerField(allow_null=True)
    rejected = serializers.IntegerField()
    flagged = serializers.IntegerField()
    mer = serializers.FloatField(allow_null=True, help_text="fooled / collected")
    vmer = serializers.FloatField(allow_null=True, help_text="verified fooled / collected")
    retracted = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="saved, verdict not yet arrived")


class InspirationRowSerializer(serializers.Serializer):
    context = serializers.DictField()
    input = serializers.DictField()
    target = serializers.JSONField()
    model_prediction = serializers.DictField(required=False, allow_null=True)
    hardness_score = serializers.FloatField(required=False, allow_null=True)


class InspirationSerializer(serializers.Serializer):
    fooling_examples = InspirationRowSerializer(many=True)
    hard_examples = InspirationRowSerializer(many=True)
