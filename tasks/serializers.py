from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tasks import figures
from tasks.models import Round, Task


class RoundSerializer(serializers.ModelSerializer):
    class Meta:
        model = Round
        fields = ["number", "status", "description", "opened_at", "closed_at"]


class FiguresSerializer(serializers.Serializer):
    collected = serializers.IntegerField()
    fooled = serializers.IntegerField()
    verified_fooled = serializers.IntegerField()
    rejected = serializers.IntegerField()
    flagged = serializers.IntegerField()
    mer = serializers.FloatField(allow_null=True, help_text="model error rate: fooled / collected")
    vmer = serializers.FloatField(allow_null=True, help_text="verified model error rate: verified fooled / collected")


class TaskListSerializer(serializers.ModelSerializer):
    current_round = serializers.SerializerMethodField()
    figures = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = ["slug", "name", "kind", "visibility", "active", "current_round", "figures"]

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_current_round(self, task: Task) -> int | None:
        current = task.current_round
        return current.number if current else None

    @extend_schema_field(FiguresSerializer)
    def get_figures(self, task: Task) -> dict:
        return figures.for_task(task)


class TaskDetailSerializer(TaskListSerializer):
    config = serializers.SerializerMethodField()
    rounds = RoundSerializer(many=True, read_only=True)
    round_figures = serializers.SerializerMethodField()

    class Meta(TaskListSerializer.Meta):
        fields = [*TaskListSerializer.Meta.fields, "config", "rounds", "round_figures"]

    @extend_schema_field(serializers.DictField())
    def get_config(self, task: Task) -> dict:
        return task.typed_config.model_dump()

    @extend_schema_field(serializers.DictField(child=FiguresSerializer()))
    def get_round_figures(self, task: Task) -> dict:
        return figures.by_round(task)
