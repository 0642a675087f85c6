"""REST API of judging marked answers (docs/chat/judging.md). Views parse, call `chat.judging` and answer; the rules
live there. Every refusal is a 4xx with a sentence: an unknown category, a rating out of range, one's own answer,
one already judged, a failure whose quorum is reached or that is already decided."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat import judging
from chat.models import Failure
from dynabench_site.errors import InvalidInput
from dynabench_site.throttles import VoteThrottle
from tasks.access import TaskScopedMixin, visible_tasks
from tasks.permissions import IsExpert, IsValidator

ERRORS = {
    400: OpenApiResponse(description="bad verdict, category, rating or reason (the field is named)"),
    401: OpenApiResponse(description="not signed in"),
    403: OpenApiResponse(description="not allowed: not a validator (or expert), or the answer is yours or a linked "
                                     "account's"),
    404: OpenApiResponse(description="no such failure or task (or hidden from you), or not a chat task"),
    409: OpenApiResponse(description="already judged by you, quorum reached, already decided, or the task's "
                                     "guidelines are not acknowledged"),
}
# For the schema only: the views read the body themselves, so each bad field gets its own sentence.
JUDGEMENT_INPUT = inline_serializer("ChatJudgementInput", {
    "verdict": serializers.ChoiceField(choices=judging.VERDICTS),
    "category": serializers.CharField(required=False, help_text="with 'confirmed': a category of the taxonomy"),
    "rating": serializers.IntegerField(required=False, min_value=0, max_value=100,
                                       help_text="the answer's rating; needed unless 'unusable'"),
    "reason": serializers.CharField(required=False, max_length=judging.MAX_REASON_CHARS),
})
JUDGEMENT_EXAMPLES = [
    OpenApiExample("confirm", request_only=True,
                   value={"verdict": "confirmed", "category": "wrong", "rating": 10, "reason": "Canberra."}),
    OpenApiExample("not a failure", request_only=True, value={"verdict": "not_a_failure", "rating": 80}),
    OpenApiExample("unusable", request_only=True, value={"verdict": "unusable", "reason": "The answer is empty."}),
]


def body_of(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise InvalidInput("the body must be a JSON object with verdict, category, rating and reason")
    return request.data


def visible_failure(request: Request, pk: int) -> Failure:
    tasks = visible_tasks(request.user)
    failure = get_object_or_404(Failure.objects.select_related("message__conversation__round__task"),
                                pk=pk, message__conversation__round__task__in=tasks)
    judging.chat_task(failure.message.conversation.round.task)
    return failure


class NextFailureView(TaskScopedMixin, APIView):
    permission_classes = [IsAuthenticated, IsValidator]

    @extend_schema(
        summary="The next marked answer to judge, with its conversation",
        description=(
            "The least-judged marked answer of the task that still needs judgements (the oldest first among "
            "equals): never one you marked, nor one marked by an account linked to yours, nor one you judged. The "
            "conversation comes up to the marked answer, the models blinded (\"Model A\"). With nothing to judge, "
            "`failure` is null and `reason` says why (none_open, only_own, all_judged). Reads only: no lease."
        ),
        responses={200: OpenApiResponse(description="{failure, reason, detail}"), **ERRORS},
    )
    def get(self, request: Request, slug: str) -> Response:
        task = self.get_task()
        found = judging.next_failure(task, request.user)
        if found.failure is None:
            return Response({"failure": None, "reason": found.reason, "detail": found.detail})
        return Response({"failure": judging.failure_payload(found.failure, task), "reason": None, "detail": None})


class JudgementView(APIView):
    permission_classes = [IsAuthenticated]
    throttle_classes = [VoteThrottle]

    @extend_schema(
        summary="Judge a marked answer: confirmed (with the category), not a failure, or unusable",
        description=(
            "A validator's judgement counts towards the task's quorum (`validation.quorum`). The last one decides "
            "the consensus: confirmed by a majority (the category by Dawid-Skene), rejected by a majority, else "
            "disputed (the experts decide). `rating` (0-100) rates the answer; it is needed unless 'unusable', "
            "which needs a reason."
        ),
        request=JUDGEMENT_INPUT,
        responses={201: OpenApiResponse(description="the judgement and the failure's consensus"), **ERRORS},
        examples=JUDGEMENT_EXAMPLES,
    )
    def post(self, request: Request, pk: int) -> Response:
        failure = visible_failure(request, pk)
        data = body_of(request)
        outcome = judging.judge(request.user, failure, data.get("verdict"), data.get("category"),
                                data.get("rating"), data.get("reason"))
        return Response(outcome_payload(outcome), status=status.HTTP_201_CREATED)


class DecisionView(APIView):
    permission_classes = [IsAuthenticated]
    throttle_classes = [VoteThrottle]

    @extend_schema(
        summary="An expert's or owner's decision on a marked answer (overrides the crowd)",
        description=(
            "The decision is the failure's consensus whatever the crowd said: confirmed with its category, or "
            "rejected ('not_a_failure' or 'unusable'). A reason is required; a later decision revises it."
        ),
        request=JUDGEMENT_INPUT,
        responses={201: OpenApiResponse(description="the decision and the failure's consensus"), **ERRORS},
        examples=JUDGEMENT_EXAMPLES,
    )
    def post(self, request: Request, pk: int) -> Response:
        failure = visible_failure(request, pk)
        data = body_of(request)
        outcome = judging.decide(request.user, failure, data.get("verdict"), data.get("category"),
                                 data.get("rating"), data.get("reason"))
        return Response(outcome_payload(outcome), status=status.HTTP_201_CREATED)


class DisputedView(TaskScopedMixin, APIView):
    permission_classes = [IsAuthenticated, IsExpert]

    @extend_schema(
        summary="The experts' list: marked answers the validators could not decide",
        description="Each disputed failure with its conversation (blinded) and every judgement of it, oldest first "
                    "(at most 200).",
        responses={200: OpenApiResponse(description="{failures: [...]}"), **ERRORS},
    )
    def get(self, request: Request, slug: str) -> Response:
        task = self.get_task()
        return Response({"failures": [disputed_payload(f, task) for f in judging.disputed(task)[:200]]})


class FiguresView(TaskScopedMixin, APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        summary="Judging figures of a chat task, and per target model",
        description=(
            "Answers, marked, confirmed, rejected, disputed and unvalidated failures; MER (confirmed / answers) and "
            "vMER (confirmed / judged) with Wilson 95 % intervals; the validators' mean rating of the marked "
            "answers and Krippendorff's alpha (interval) of those ratings."
        ),
        responses={200: OpenApiResponse(description="the figures"), 404: ERRORS[404]},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(judging.figures(judging.chat_task(self.get_task())))


def disputed_payload(failure: Failure, task) -> dict[str, Any]:
    return {**judging.failure_payload(failure, task), "judgements": judging.judgements_payload(failure),
            "decision_url": reverse("api-chat-failure-decision", args=[failure.pk])}


def outcome_payload(outcome: judging.Outcome) -> dict[str, Any]:
    j, f = outcome.judgement, outcome.failure
    return {
        "judgement": {"id": j.pk, "verdict": j.verdict, "category": j.category, "rating": j.rating,
                      "reason": j.reason, "expert": j.expert},
        "failure": {"id": f.pk, "consensus": f.consensus, "consensus_label": f.get_consensus_display(),
                    "decided_category": f.decided_category, "decided_by_expert": f.decided_by_expert},
    }


urlpatterns = [
    path("tasks/<slug:slug>/chat/judge/next/", NextFailureView.as_view(), name="api-chat-judge-next"),
    path("tasks/<slug:slug>/chat/figures/", FiguresView.as_view(), name="api-chat-figures"),
    path("tasks/<slug:slug>/chat/disputed/", DisputedView.as_view(), name="api-chat-disputed"),
    path("chat/failures/<int:pk>/judgements/", JudgementView.as_view(), name="api-chat-failure-judgements"),
    path("chat/failures/<int:pk>/decision/", DecisionView.as_view(), name="api-chat-failure-decision"),
]
