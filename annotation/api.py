"""REST API of the create flow. Views parse, call a service, and answer; the rules live in services."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import feedback, jobs, scoring, services
from annotation.models import Example, Suggestion
from annotation.serializers import (
    EXAMPLE_LINKS,
    AppealSerializer,
    ContextSerializer,
    ExampleSerializer,
    ExplanationSerializer,
    InspirationSerializer,
    MyExampleSerializer,
    ReasonSerializer,
    SandboxVerdictSerializer,
    SubmissionSerializer,
    SuggestionRequestSerializer,
    SuggestionSerializer,
    WriterFiguresSerializer,
)
from annotation.throttles import SandboxThrottle, SuggestionThrottle, TaskSubmissionThrottle
from dynabench_site.errors import Conflict
from dynabench_site.params import whole_number
from study import arms
from tasks import roles
from tasks.access import TaskScopedMixin, visible_task
from tasks.models import Task
from tasks.permissions import IsAnnotator


def sandbox_requested(request: Request) -> bool:
    return request.query_params.get("sandbox", "").lower() in {"1", "true", "yes"}


class TaskScopedView(TaskScopedMixin, APIView):
    """A view on one task the caller can see (404 otherwise); only annotators may act."""

    permission_classes = [IsAuthenticated, IsAnnotator]

    def current_round(self):
        return services.current_round(self.get_task())


class NextContextView(TaskScopedView):
    @extend_schema(
        summary="Serve a context of the current round, chosen by the task's sampling strategy",
        description="A POST: serving a context counts its use (the sampling strategies prefer the least used). "
                    "`exclude` names the context shown now, for 'new context'.",
        parameters=[OpenApiParameter("exclude", int, description="the context shown now (for 'new context')")],
        request=None,
        responses={200: ContextSerializer, 204: OpenApiResponse(description="the task has no contexts"), 400: None,
                   409: None},
    )
    def post(self, request: Request, slug: str) -> Response:
        exclude = whole_number(request.query_params.get("exclude"), "exclude")
        context = services.next_context(self.get_task(), self.current_round(), exclude=exclude)
        if context is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(ContextSerializer(context).data)


class ExampleCreateView(TaskScopedView):
    def get_throttles(self):
        return [SandboxThrottle() if sandbox_requested(self.request) else TaskSubmissionThrottle()]

    @extend_schema(
        summary="Submit an example; the verdict comes back at once when scoring is quick",
        description=(
            "The example is saved before any model is called. Answers 201 with the verdict when scoring "
            "finished within VERDICT_WAIT_MS, 202 with `scoring_state: pending` otherwise (poll "
            "`/api/examples/{id}/`), and 200 with the first example when the idempotency key was used before. "
            "With `?sandbox=1` the example is scored but nothing is stored (same as `/sandbox/`). "
            "Verdict fields (`fooled`, ...) are decided by the server; sending them is a 400. "
            "`next_context: true` adds `next_context` to the answer (the context to write about next, chosen as "
            "`contexts/next` chooses it; null when there is none): one request per example for a writer who moves on. "
            "`word_map: false` stores the verdict alone, with no word map after it."
        ),
        parameters=[OpenApiParameter("sandbox", bool, description="score without storing")],
        request=SubmissionSerializer,
        responses={
            200: ExampleSerializer, 201: ExampleSerializer, 202: ExampleSerializer,
            400: None, 403: None, 409: None, 429: None,
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        if sandbox_requested(request):
            return sandbox_response(self.get_task(), request)
        body = SubmissionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        task = self.get_task()
        result = services.submit(request.user, task, body.submission(), word_map=body.validated_data["word_map"])
        if not body.validated_data["next_context"]:
            return submission_response(result, request.user)
        # Chosen before the wait for the verdict, while the worker scores, so it costs the writer no time.
        following = services.next_context(task, result.example.round, exclude=result.example.context_id)
        response = submission_response(result, request.user)
        response.data["next_context"] = ContextSerializer(following).data if following is not None else None
        return response


def submission_response(result: services.SubmitResult, viewer=None) -> Response:
    hidden = arms.hides_verdict(result.example, viewer)  # a study arm without the model in the loop: "saved" only
    example = result.example if hidden else scoring.await_verdict(result.example, settings.VERDICT_WAIT_SECONDS,
                                                                  fresh=result.created)
    if not result.created:
        code = status.HTTP_200_OK
    elif hidden:
        code = status.HTTP_201_CREATED  # saved; its writer waits for no verdict
    elif example.scoring_state == Example.Scoring.PENDING:
        code = status.HTTP_202_ACCEPTED
    else:
        code = status.HTTP_201_CREATED
    headers = {"Location": reverse("api-example-detail", args=[example.pk])}
    if not result.created:
        headers["Idempotent-Replayed"] = "true"
    return Response(shown(example, viewer), status=code, headers=headers)


def shown(example: Example, viewer) -> dict:
    """The example as `viewer` may see it: without the verdict for its writer in a study arm without the model in
    the loop (study.arms.hides_verdict); its owners see everything."""
    return ExampleSerializer(example, context={"hide_verdict": arms.hides_verdict(example, viewer)}).data


def sandbox_response(task: Task, request: Request) -> Response:
    """Score without storing. A model server that is down answers 503 with Retry-After (BackendError)."""
    body = SubmissionSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    return Response(SandboxVerdictSerializer(services.sandbox_verdict(task, body.submission(), request.user)).data)


class SandboxView(TaskScopedView):
    throttle_classes = [SandboxThrottle]

    @extend_schema(
        summary="Score an example without storing anything (sandbox)",
        request=SubmissionSerializer,
        responses={200: SandboxVerdictSerializer, 400: None, 409: None, 429: None, 503: None},
    )
    def post(self, request: Request, slug: str) -> Response:
        return sandbox_response(self.get_task(), request)


class InspirationView(TaskScopedView):
    @extend_schema(
        summary="Inspiration: verified fooling examples of this round and hardness-seeded hard examples",
        responses={200: InspirationSerializer, 409: None},
    )
    def get(self, request: Request, slug: str) -> Response:
        data = services.inspiration(self.get_task(), self.current_round())
        return Response(InspirationSerializer(data).data)


class SuggestionCreateView(TaskScopedView):
    throttle_classes = [SuggestionThrottle]

    @extend_schema(
        summary="Ask the writing assistant for suggestions for the shown context and intended label",
        description=(
            "Answers 202 at once with a pending request; a job has the task's language model write the suggestions "
            "and scores each with the round's live ensemble (`fooled`). Poll `link` until `state` is `ready` or "
            "`failed` (`error` says why, for people). 409 when the assistant is off for the task, the round is "
            "closed or the guidelines are unread. Name the request (`suggestion_id`, and `suggestion_choice` for "
            "the one taken) when submitting: the example records its provenance."
        ),
        request=SuggestionRequestSerializer,
        responses={202: SuggestionSerializer, 400: None, 403: None, 409: None, 429: None},
    )
    def post(self, request: Request, slug: str) -> Response:
        body = SuggestionRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        suggestion = services.ask_assistant(request.user, self.get_task(), data.get("context_id"), data["target"],
                                            data.get("round"))
        return Response(suggestion_data(suggestion, request.user), status=status.HTTP_202_ACCEPTED,
                        headers={"Location": reverse("api-suggestion-detail", args=[suggestion.pk])})


class SuggestionView(APIView):
    """One suggestion request: its writer sees it, and so do the task's owners and admins."""

    permission_classes = [IsAuthenticated]

    @extend_schema(summary="A suggestion request: its state and, when ready, the scored candidates",
                   responses={200: SuggestionSerializer, 404: None})
    def get(self, request: Request, pk: int) -> Response:
        suggestion = get_object_or_404(Suggestion.objects.select_related("round__task"), pk=pk)
        if suggestion.author_id != request.user.pk and not roles.can_manage(request.user, suggestion.round.task):
            raise Http404("No suggestion with this id.")
        return Response(suggestion_data(suggestion, request.user))


def suggestion_data(suggestion: Suggestion, viewer) -> dict:
    """A suggestion request; for its writer in a study arm without the model in the loop, the candidates without
    the models' answers (study.arms)."""
    data = SuggestionSerializer(suggestion).data
    if suggestion.author_id == viewer.pk and not arms.shows_models(suggestion.round.task, viewer):
        data["candidates"] = [{"text": c["text"]} for c in data["candidates"]]
    return data


class ExampleView(APIView):
    """One example: its author sees it, and so do the task's owners and admins."""

    permission_classes = [IsAuthenticated]

    def get_example(self, pk: int, *, author_only: bool) -> Example:
        example = get_object_or_404(Example.objects.select_related("round__task", "context"), pk=pk)
        allowed = example.author_id == self.request.user.pk
        if not allowed and not author_only:
            allowed = roles.can_manage(self.request.user, example.round.task)
        if not allowed:
            raise Http404("No example with this id.")
        return example

    @extend_schema(
        summary="An example with its verdict, per-model predictions, explanation and scoring state",
        description="Reading changes nothing; to ask for a pending verdict again, POST to the `score` link.",
        responses={200: ExampleSerializer, 404: None},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(shown(self.get_example(pk, author_only=False), request.user))


class ScoreView(ExampleView):
    http_method_names = ["post", "options"]

    @extend_schema(
        summary="Poll a pending verdict: re-queues scoring when the example's retry is due; answers the example",
        description="What the create page polls while a verdict is pending. Scoring is queued again only when the "
                    "example is still pending and its backoff has passed, by one of many concurrent calls; "
                    "otherwise this only answers the example. A POST, so a read-only token cannot do it.",
        request=None,
        responses={200: ExampleSerializer, 404: None},
    )
    def post(self, request: Request, pk: int) -> Response:
        example = self.get_example(pk, author_only=False)
        if jobs.revive_if_due(example) or scoring.expire_stale_map(example):
            example.refresh_from_db()
        return Response(shown(example, request.user))


class WordMapView(ExampleView):
    http_method_names = ["post", "options"]

    @extend_schema(
        summary="Ask again for the verdict's word map",
        description="The word map follows the verdict in a job of its own (`explanation_state`: pending, ready, "
                    "unavailable). When it is unavailable (the model server was busy, or failed), this queues it "
                    "again; a pending or ready map is left as it is. 409 while the example has no verdict.",
        request=None, responses={200: ExampleSerializer, 404: None, 409: None},
    )
    def post(self, request: Request, pk: int) -> Response:
        example = self.get_example(pk, author_only=False)
        if example.scoring_state != Example.Scoring.SCORED:
            raise Conflict("this example has no verdict yet, so no word map to ask for; poll its `score` link")
        if jobs.request_map(example):
            example.refresh_from_db()
        return Response(shown(example, request.user))


class RetractView(ExampleView):
    http_method_names = ["post", "options"]

    @extend_schema(summary="Retract your example (it stops counting)", request=None,
                   responses={200: ExampleSerializer, 404: None, 409: None})
    def post(self, request: Request, pk: int) -> Response:
        example = services.retract(self.get_example(pk, author_only=True))
        return Response(shown(example, request.user))


class FlagView(ExampleView):
    http_method_names = ["post", "options"]

    @extend_schema(summary="Flag your example, with a reason", request=ReasonSerializer,
                   responses={200: ExampleSerializer, 400: None, 404: None})
    def post(self, request: Request, pk: int) -> Response:
        example = self.get_example(pk, author_only=True)
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(shown(services.flag(example, body.validated_data["reason"]), request.user))


class WriterExplanationView(ExampleView):
    http_method_names = ["post", "options"]

    @extend_schema(summary="Explain why the model was wrong (kept with your example)", request=ExplanationSerializer,
                   responses={200: ExampleSerializer, 400: None, 404: None})
    def post(self, request: Request, pk: int) -> Response:
        example = self.get_example(pk, author_only=True)
        body = ExplanationSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        text = body.validated_data["writer_explanation"]
        return Response(shown(services.explain(example, text), request.user))


class AppealView(ExampleView):
    http_method_names = ["post", "options"]

    @extend_schema(
        summary="Appeal a rejection to an expert (once per example)",
        description="Allowed while the example is rejected or flagged by the validators and was not appealed "
                    "before; it then waits in the task's expert queue until an expert or owner decides.",
        request=AppealSerializer, responses={200: ExampleSerializer, 400: None, 404: None, 409: None},
    )
    def post(self, request: Request, pk: int) -> Response:
        example = self.get_example(pk, author_only=True)
        body = AppealSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(shown(services.appeal(example, body.validated_data["reason"]), request.user))


class MyExamplesView(ListAPIView):
    """Paginated like every list (`count`, `next`, `previous`, `results`)."""

    permission_classes = [IsAuthenticated]
    serializer_class = MyExampleSerializer

    def get_queryset(self):
        slug = self.request.query_params.get("task")
        return feedback.my_examples(self.request.user, visible_task(self.request.user, slug) if slug else None)

    @extend_schema(
        summary="Your examples, newest first: the model's verdict, the validation outcome, the corrected label, "
                "flag reasons and whether you may appeal",
        parameters=[OpenApiParameter("task", str, description="a task slug (all tasks when absent)")],
    )
    def get(self, request: Request, *args, **kwargs) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        data = [{**row, "links": example_links(row["id"])} for row in feedback.rows(page)]
        return self.get_paginated_response(MyExampleSerializer(data, many=True).data)


def example_links(pk: int) -> dict[str, str]:
    return {name: reverse(route, args=[pk]) for name, route in EXAMPLE_LINKS.items()}


class MyStatsView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="Your figures as a writer: examples, fooled, verified fooled, MER, retractions",
        parameters=[OpenApiParameter("task", str, description="a task slug (all tasks when absent)")],
        responses={200: WriterFiguresSerializer},
    )
    def get(self, request: Request) -> Response:
        slug = request.query_params.get("task")
        task = visible_task(request.user, slug) if slug else None
        figures = services.writer_figures(request.user, task)
        if task is not None and not arms.shows_models(task, request.user):  # no model in the loop: no verdict counts
            figures.update(fooled=None, verified_fooled=None, mer=None, vmer=None)
        return Response(WriterFiguresSerializer(figures).data)
