"""The arms' API (study.arms): the owner defines the arms (and reads the assignment's settings, which the study's
settings set: study.api); a participant asks what their condition does on their page (never its name: the study is
blind). Views parse, call study.arms, answer."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from study import arms
from study.models import Arm, Study
from tasks.access import TaskScopedMixin
from tasks.permissions import IsAnnotator, IsTaskOwner


class ArmSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    key = serializers.CharField(help_text="letters, digits, - and _; never changes (exports name it)")
    name = serializers.CharField()
    description = serializers.CharField(required=False, allow_blank=True)
    assistant = serializers.BooleanField(required=False, help_text="the writing assistant is offered")
    model_in_loop = serializers.BooleanField(
        required=False, help_text="false: standard collection; the writer sees no verdict, the example is scored all "
                                  "the same")
    ensemble = serializers.IntegerField(
        required=False, allow_null=True, help_text="another target ensemble of this task (id); null: the round's live one")
    weight = serializers.IntegerField(required=False, help_text="the arm's share of assignments (0: none)")
    position = serializers.IntegerField(required=False)
    active = serializers.BooleanField(required=False, help_text="new participants may be assigned to it")
    participants = serializers.IntegerField(read_only=True)
    examples = serializers.IntegerField(read_only=True)


class AssignmentSerializer(serializers.Serializer):
    enabled = serializers.BooleanField(read_only=True, help_text="the study is on (set on the study's console)")
    seed = serializers.IntegerField(read_only=True, help_text="set with the study's settings (api-study)")
    assignment = serializers.ChoiceField(choices=Study.Assignment.choices, read_only=True,
                                         help_text="balanced (permuted blocks) or random; set with the study's settings")
    block_repeats = serializers.IntegerField(read_only=True, help_text="a balanced block holds each arm weight × this")
    assigned = serializers.IntegerField(read_only=True, help_text="participants assigned so far")


class ArmsSerializer(serializers.Serializer):
    assignment = AssignmentSerializer()
    arms = ArmSerializer(many=True)


class MineSerializer(serializers.Serializer):
    in_study = serializers.BooleanField(help_text="the task's study assigns arms (or assigned you one)")
    assigned = serializers.BooleanField()
    assistant = serializers.BooleanField(help_text="the writing assistant is offered to you")
    model_in_loop = serializers.BooleanField(help_text="you see the models' answers and verdicts")


def arm_row(arm: Arm) -> dict:
    return {
        "id": arm.pk, "key": arm.key, "name": arm.name, "description": arm.description, "assistant": arm.assistant,
        "model_in_loop": arm.model_in_loop, "ensemble": arm.ensemble_id, "weight": arm.weight,
        "position": arm.position, "active": arm.active,
        "participants": arm.participant_count if hasattr(arm, "participant_count") else arm.participants.count(),
        "examples": arm.example_count if hasattr(arm, "example_count") else arm.examples.count(),
    }


def assignment_row(task) -> dict:
    study = arms.study_of(task)
    return {
        "enabled": bool(study and study.enabled), "seed": study.seed if study else 0,
        "assignment": study.assignment if study else Study.Assignment.BALANCED,
        "block_repeats": arms.BLOCK_REPEATS, "assigned": sum(arms.counts(task).values()),
    }


class OwnerView(TaskScopedMixin, APIView):
    permission_classes = [IsAuthenticated, IsTaskOwner]


class ArmsView(OwnerView):
    @extend_schema(summary="The task's study arms and the assignment's settings (owners)", operation_id="tasks_arms_list",
                   responses={200: ArmsSerializer, 403: None, 404: None})
    def get(self, request: Request, slug: str) -> Response:
        task = self.get_task()
        return Response({"assignment": assignment_row(task), "arms": [arm_row(a) for a in arms.arms_of(task)]})

    @extend_schema(
        summary="Add an arm (owners)",
        description="`key` and `name` are required. An ensemble must be one of this task's, with models that can "
                    "still score (not retired or failed).",
        request=ArmSerializer, responses={201: ArmSerializer, 400: None, 403: None, 404: None, 409: None})
    def post(self, request: Request, slug: str) -> Response:
        arm = arms.create_arm(self.get_task(), request.data)
        return Response(arm_row(arm), status=status.HTTP_201_CREATED)


class ArmView(OwnerView):
    def get_arm(self, pk: int) -> Arm:
        return get_object_or_404(Arm.objects.select_related("task"), pk=pk, task=self.get_task())

    @extend_schema(summary="One arm (owners)", responses={200: ArmSerializer, 403: None, 404: None})
    def get(self, request: Request, slug: str, pk: int) -> Response:
        return Response(arm_row(self.get_arm(pk)))

    @extend_schema(
        summary="Change an arm (owners)",
        description="Any of the arm's fields but its key. Once the arm has participants or examples its condition "
                    "(assistant, model_in_loop, ensemble) is fixed (409): add another arm and deactivate this one. "
                    "Nobody's assigned arm ever changes.",
        request=ArmSerializer, responses={200: ArmSerializer, 400: None, 403: None, 404: None, 409: None})
    def patch(self, request: Request, slug: str, pk: int) -> Response:
        return Response(arm_row(arms.update_arm(self.get_arm(pk), request.data)))

    @extend_schema(summary="Delete an arm nobody was assigned to (owners); otherwise deactivate it (409)",
                   responses={204: None, 403: None, 404: None, 409: None})
    def delete(self, request: Request, slug: str, pk: int) -> Response:
        arms.delete_arm(self.get_arm(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MineView(TaskScopedMixin, APIView):
    permission_classes = [IsAuthenticated, IsAnnotator]

    @extend_schema(
        summary="What your study condition does on your page (never its name: participants are not told their arm)",
        description="Reading changes nothing: you are assigned when you start the work (the study's steps, the "
                    "write page or your first submission).",
        responses={200: MineSerializer, 403: None, 404: None})
    def get(self, request: Request, slug: str) -> Response:
        return Response(MineSerializer(arms.mine(self.get_task(), request.user)).data)
