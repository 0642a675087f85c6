"""REST API of validation. Views parse, call a service and answer; the rules live in the services."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Example
from dynabench_site.throttles import VoteThrottle
from tasks.access import TaskScopedMixin, visible_tasks
from tasks.permissions import IsValidator
from validation import queue, services, stats
from validation.serializers import (
    ErrorSerializer,
    NextItemSerializer,
    TaskStatsSerializer,
    VoteInputSerializer,
    VoteResultSerializer,
    item_payload,
    vote_payload,
)


class NextItemView(TaskScopedMixin, APIView):
    permission_classes = [IsAuthenticated, IsValidator]

    @extend_schema(
        summary="Lease the next example to validate",
        description=(
            "Fooling examples first, then those with the fewest votes, then the oldest; never your own, never one "
            "you validated, never a retracted one. The item is leased to you for the task's `lease_seconds`; "
            "asking again while you hold it returns the same item. With nothing to validate, `item` is null "
            "and `reason` says why. A POST: it leases the item (a read-only token cannot)."
        ),
        request=None,
        responses={
            200: NextItemSerializer,
            401: OpenApiResponse(ErrorSerializer, description="not signed in"),
            403: OpenApiResponse(ErrorSerializer, description="not a validator"),
            404: OpenApiResponse(ErrorSerializer, description="no such task (or hidden from you)"),
        },
        examples=[OpenApiExample("queue empty", response_only=True, value={
            "item": None, "reason": "only_own", "detail": queue.REASONS[queue.ONLY_OWN]})],
    )
    def post(self, request: Request, slug: str) -> Response:
        claim = queue.claim_next(self.get_task(), request.user)
        if claim.example is None:
            return Response({"item": None, "reason": claim.reason, "detail": claim.detail})
        url = reverse("api-example-validations", args=[claim.example.pk])
        return Response({"item": item_payload(claim.example, claim.expires_at, url), "reason": None, "detail": None})


class VoteView(APIView):
    permission_classes = [IsAuthenticated]
    throttle_classes = [VoteThrottle]

    @extend_schema(
        summary="Validate an example: correct, incorrect (with the right label) or flagged (with a reason)",
        description=(
            "A crowd vote counts towards the task's consensus rule (quorum or adaptive); a vote by an expert or "
            "a task owner overrides it and may be revised. The answer carries the example's consensus after the vote."
        ),
        request=VoteInputSerializer,
        responses={
            201: VoteResultSerializer,
            400: OpenApiResponse(ErrorSerializer, description="bad verdict, label or reason (the field is named)"),
            401: OpenApiResponse(ErrorSerializer, description="not signed in"),
            403: OpenApiResponse(ErrorSerializer, description="not a validator, or your own example"),
            404: OpenApiResponse(ErrorSerializer, description="no such example"),
            409: OpenApiResponse(
                ErrorSerializer,
                description="already validated by you, already decided, retracted, out of scope, or held by others",
            ),
        },
        examples=[
            OpenApiExample("confirm", request_only=True, value={"verdict": "correct"}),
            OpenApiExample("correct the label", request_only=True, value={"verdict": "incorrect", "label": "negative"}),
            OpenApiExample("flag", request_only=True, value={"verdict": "flagged", "reason": "not English"}),
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        visible = Example.objects.filter(round__task__in=visible_tasks(request.user))
        example = get_object_or_404(visible.select_related("round__task", "context"), pk=pk)
        body = VoteInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        result = services.submit_vote(request.user, example, data["verdict"], data.get("label"), data.get("reason"))
        return Response(vote_payload(result.validation, result.decision, result.gold_answer), status=status.HTTP_201_CREATED)


class TaskStatsView(TaskScopedMixin, APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        summary="Figures of a task, derived from the data",
        description=(
            "Per task and per round: MER (fooled / collected), vMER (verified fooled / collected), rejection and "
            "flag rates (over decided examples) and Krippendorff's alpha of the crowd votes; per annotator the "
            "same figures as a leaderboard; per validator the agreement with the final consensus."
        ),
        responses={200: TaskStatsSerializer, 404: OpenApiResponse(ErrorSerializer, description="no such task")},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(stats.task_stats(self.get_task()))
