from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from pydantic import BaseModel
from rest_framework import serializers

from tasks import figures, roles
from tasks.kinds.base import LLMProviderSettings
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

    @extend_schema_field(serializers.DictField(help_text="the task's settings; the language model provider "
                                                         "settings (endpoint, model) only for its owners and staff"))
    def get_config(self, task: Task) -> dict:
        config = task.typed_config
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if user is not None and roles.can_manage(user, task):
            return config.model_dump()
        return without_providers(config)

    @extend_schema_field(serializers.DictField(child=FiguresSerializer()))
    def get_round_figures(self, task: Task) -> dict:
        return figures.by_round(task)


def without_providers(config: BaseModel) -> dict[str, Any]:
    """A config as everyone may read it: every language model provider setting left out (which endpoint and model
    a task uses is its owners' and the operator's business)."""
    out: dict[str, Any] = {}
    for name in type(config).model_fields:
        value = getattr(config, name)
        if isinstance(value, LLMProviderSettings):
            continue
        out[name] = without_providers(value) if isinstance(value, BaseModel) else config.model_dump(include={name})[name]
    return out
