from __future__ import annotations

from typing import Any

from rest_framework import serializers

from annotation.models import Example
from annotation.serializers import StrictSerializer
from tasks.models import Task
from validation.consensus import Decision
from validation.models import GoldAnswer, Validation


class VoteInputSerializer(StrictSerializer):
    """The body of a vote; the rules on label and reason are checked by validation.services. An unknown field
    is refused (400 naming it), as in an example's body: a misspelt `reason` must not pass as a vote without one."""

    verdict = serializers.ChoiceField(choices=Validation.Verdict.choices)
    label = serializers.JSONField(
        required=False, allow_null=True,
        help_text="the right label; required with 'incorrect' (a QA answer is {\"text\", \"start\"})",
    )
    reason = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False, max_length=1000,
        help_text="required with 'flagged': why the example is unusable",
    )


class ModelVerdictSerializer(serializers.Serializer):
    fooled = serializers.BooleanField(allow_null=True)
    prediction = serializers.JSONField(allow_null=True, help_text="the ensemble's prediction")


class ItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    round = serializers.IntegerField()
    kind = serializers.CharField()
    context = serializers.JSONField()
    input = serializers.JSONField()
    writer_label = serializers.JSONField()
    model = ModelVerdictSerializer()
    labels = serializers.ListField(child=serializers.CharField(), allow_null=True)
    lease_expires_at = serializers.DateTimeField()
    validate_url = serializers.CharField(help_text="where to POST the vote")


class NextItemSerializer(serializers.Serializer):
    item = ItemSerializer(allow_null=True)
    reason = serializers.CharField(
        allow_null=True,
        help_text="when item is null: nothing_written, round_closed, all_validated, only_own, already_voted, all_leased",
    )
    detail = serializers.CharField(allow_null=True, help_text="the reason in words")


class VoteResultSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    example = serializers.IntegerField()
    verdict = serializers.CharField()
    label = serializers.JSONField(allow_null=True)
    reason = serializers.CharField()
    mode = serializers.CharField(help_text="crowd, expert or owner (expert and owner votes override)")
    consensus = serializers.ChoiceField(choices=Example.Consensus.choices)
    validated_label = serializers.JSONField(allow_null=True)


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField(required=False)
    errors = serializers.DictField(required=False)


class RateSerializer(serializers.Serializer):
    collected = serializers.IntegerField()
    fooled = serializers.IntegerField()
    verified = serializers.IntegerField()
    verified_fooled = serializers.IntegerField()
    rejected = serializers.IntegerField()
    flagged = serializers.IntegerField()
    disputed = serializers.IntegerField()
    decided = serializers.IntegerField(help_text="verified + rejected + flagged")
    mer = serializers.FloatField(allow_null=True, help_text="fooled / collected")
    vmer = serializers.FloatField(allow_null=True, help_text="verified fooled / collected")
    rejection_rate = serializers.FloatField(allow_null=True, help_text="rejected / decided")
    flag_rate = serializers.FloatField(allow_null=True, help_text="flagged / decided")


class AgreementSerializer(serializers.Serializer):
    alpha = serializers.FloatField(allow_null=True, help_text="Krippendorff's alpha (nominal) over crowd votes")
    units = serializers.IntegerField(help_text="examples with at least two crowd votes")
    votes = serializers.IntegerField()


class ScopeStatsSerializer(RateSerializer):
    agreement = AgreementSerializer()


class RoundStatsSerializer(ScopeStatsSerializer):
    round = serializers.IntegerField()
    status = serializers.CharField()


class BadgeSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()


class AnnotatorStatsSerializer(RateSerializer):
    rank = serializers.IntegerField()
    username = serializers.CharField()
    badges = BadgeSerializer(many=True, help_text="badges held on this task (derived periodically from the data)")


class ValidatorStatsSerializer(serializers.Serializer):
    username = serializers.CharField()
    votes = serializers.IntegerField()
    decided = serializers.IntegerField(help_text="votes on examples with a final consensus")
    agreed = serializers.IntegerField()
    agreement = serializers.FloatField(allow_null=True, help_text="agreed / decided")


class TaskStatsSerializer(serializers.Serializer):
    task = serializers.CharField()
    overall = ScopeStatsSerializer()
    rounds = RoundStatsSerializer(many=True)
    annotators = AnnotatorStatsSerializer(many=True)
    validators = ValidatorStatsSerializer(many=True)


def item_payload(example: Example, expires_at, validate_url: str) -> dict[str, Any]:
    task: Task = example.round.task
    labels = getattr(task.typed_config, "labels", None)
    return {
        "id": example.pk,
        "round": example.round.number,
        "kind": task.kind,
        "context": example.context.payload if example.context_id else {},
        "input": example.input,
        "writer_label": example.target,
        "model": {"fooled": example.fooled, "prediction": example.ensemble_prediction},
        "labels": labels,
        "lease_expires_at": expires_at,
        "validate_url": validate_url,
    }


def vote_payload(validation: Validation | None, decision: Decision, gold_answer: GoldAnswer | None = None) -> dict[str, Any]:
    """A vote as the API answers it. An answer on a gold item has the same shape (the crowd is not told
    beforehand which items are gold; afterwards the example's consensus is the true one)."""
    if validation is None and gold_answer is not None:
        return {
            "id": gold_answer.pk, "example": gold_answer.gold_id, "verdict": gold_answer.verdict,
            "label": gold_answer.label, "reason": "", "mode": Validation.Mode.CROWD,
            "consensus": decision.state, "validated_label": decision.label,
        }
    return {
        "id": validation.pk,
        "example": validation.example_id,
        "verdict": validation.verdict,
        "label": validation.label,
        "reason": validation.reason,
        "mode": validation.mode,
        "consensus": decision.state,
        "validated_label": decision.label,
    }
