from __future__ import annotations

from rest_framework import serializers

from modelzoo.models import Ensemble, Evaluation, ModelVersion


class EvaluationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Evaluation
        fields = ["dataset", "size", "metrics", "created_at"]


class ModelVersionSerializer(serializers.ModelSerializer):
    task = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    evaluations = EvaluationSerializer(many=True, read_only=True)

    class Meta:
        model = ModelVersion
        fields = ["id", "task", "version", "name", "head", "status", "lineage", "hyperparameters", "metrics",
                  "progress", "progress_message", "error", "parent", "evaluations", "created_at", "updated_at"]


class EnsembleSerializer(serializers.ModelSerializer):
    task = serializers.CharField(source="round.task.slug", read_only=True)
    round = serializers.IntegerField(source="round.number", read_only=True)
    members = serializers.SerializerMethodField()

    class Meta:
        model = Ensemble
        fields = ["id", "task", "round", "strategy", "active", "members", "created_at"]

    def get_members(self, ensemble: Ensemble) -> list[dict]:
        return [{"id": v.pk, "name": v.name, "status": v.status} for v in ensemble.ordered_members()]
