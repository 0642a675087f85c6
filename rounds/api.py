"""REST API of the rounds app. Views parse, call a service, and answer; the rules live in services."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from dynabench_site import bodylimit
from dynabench_site.params import whole_number
from dynabench_site.parsers import BoundedJSONParser
from dynabench_site.text import check_optional_text
from rounds import arms, dashboard, dynaboard, leaderboard, pipeline, predictions, services, uploads
from rounds.arm_serializers import ArmsComparisonSerializer
from rounds.models import PipelineRun, ResearcherModel
from rounds.serializers import (
    DashboardSerializer,
    IncludeSerializer,
    JobSerializer,
    LeaderboardSerializer,
    RoundsSerializer,
    StartSerializer,
    UploadListSerializer,
    UploadRequestSerializer,
    UploadSerializer,
)
from tasks.access import TaskScopedMixin
from tasks.permissions import IsResearcher, IsTaskOwner
from tasks.roles import can_manage


def job_payload(run: PipelineRun) -> dict:
    return {**pipeline.snapshot(run), "url": reverse("api-job-detail", args=[run.pk])}


def upload_payload(upload: ResearcherModel) -> dict:
    return {"id": upload.pk, "task": upload.task.slug, "name": upload.name, "status": upload.status,
            "stuck": uploads.is_stuck(upload), "queued_at": upload.queued_at,
            "error": upload.error, "architecture": upload.architecture, "size_bytes": upload.size_bytes,
            "model_version": upload.model_version_id, "in_next_ensemble": upload.in_next_ensemble,
            "uploaded_by": upload.uploaded_by.username, "created_at": upload.created_at}


class TaskView(TaskScopedMixin, APIView):
    """A view on one task the caller can see (404 otherwise)."""

    permission_classes = [AllowAny]


class TaskRoundsView(TaskView):
    """GET: the task's rounds and their figures. POST (owners, admins): close the current round and open
    the next through the pipeline; answers 202 with the pipeline job, 409 while another one is unfinished."""

    def get_permissions(self):
        if self.request.method == "POST":
            return [IsAuthenticated(), IsTaskOwner()]
        return super().get_permissions()

    @extend_schema(summary="The task's rounds and their figures", responses={200: RoundsSerializer})
    def get(self, request, slug: str) -> Response:
        return Response({"rounds": dashboard.round_figures(self.get_task())})

    @extend_schema(summary="Close the current round and open the next (the round pipeline)", request=StartSerializer,
                   responses={202: JobSerializer, 400: None, 403: None, 409: OpenApiResponse(
                       description="another pipeline run of this task is unfinished (`job` names it)")})
    def post(self, request, slug: str) -> Response:
        body = StartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        run = services.start_pipeline(self.get_task(), request.user, data["options"], data["description"])
        return Response(job_payload(run), status=status.HTTP_202_ACCEPTED,
                        headers={"Location": reverse("api-job-detail", args=[run.pk])})


class JobView(APIView):
    """A pipeline job's state, per-step progress and logs (the task's owners and admins)."""

    permission_classes = [IsAuthenticated]

    def get_run(self) -> PipelineRun:
        run = get_object_or_404(PipelineRun.objects.select_related("task", "from_round", "to_round"), pk=self.kwargs["pk"])
        if not can_manage(self.request.user, run.task):
            raise PermissionDenied("Only the task's owners and admins may see its pipeline jobs.")
        return run

    @extend_schema(summary="A pipeline job: state, per-step progress and logs", responses={200: JobSerializer, 403: None})
    def get(self, request, pk: int) -> Response:
        return Response(job_payload(self.get_run()))


class JobRetryView(JobView):
    http_method_names = ["post", "options"]

    @extend_schema(summary="Retry a failed pipeline job (finished steps are not redone)", request=None,
                   responses={202: JobSerializer, 403: None, 409: None})
    def post(self, request, pk: int) -> Response:
        run = services.retry_pipeline(self.get_run(), request.user)
        return Response(job_payload(run), status=status.HTTP_202_ACCEPTED)


class JobAbandonView(JobView):
    http_method_names = ["post", "options"]

    @extend_schema(summary="Abandon an unfinished pipeline job", request=None, responses={200: JobSerializer, 403: None,
                                                                                          409: None})
    def post(self, request, pk: int) -> Response:
        return Response(job_payload(services.abandon_pipeline(self.get_run(), request.user)))


class JobApproveView(JobView):
    http_method_names = ["post", "options"]

    @extend_schema(summary="Approve a pipeline job awaiting approval: deploy its new ensemble and open the next round",
                   request=None, responses={202: JobSerializer, 403: None, 409: None})
    def post(self, request, pk: int) -> Response:
        run = services.approve_pipeline(self.get_run(), request.user)
        return Response(job_payload(run), status=status.HTTP_202_ACCEPTED)


class JobDiscardView(JobView):
    http_method_names = ["post", "options"]

    @extend_schema(summary="Discard the new ensemble of a job awaiting approval: open the next round with the live one",
                   request=None, responses={202: JobSerializer, 403: None, 409: None})
    def post(self, request, pk: int) -> Response:
        run = services.discard_pipeline(self.get_run(), request.user)
        return Response(job_payload(run), status=status.HTTP_202_ACCEPTED)


class LeaderboardView(TaskView):
    """The leaderboard, ranked under the owner's Dynascore weights or the caller's (query parameters, as on the
    page); each row carries its rank under both (`rank`, `owner_rank`, `moved`: places up, negative down)."""

    @extend_schema(summary="Models of the task ranked by Dynascore, with their score on every test set",
                   parameters=[OpenApiParameter(m, float, description=f"the weight of {m} (0 to "
                                                f"{dynaboard.MAX_WEIGHT:g}; default: the owner's)")
                               for m in dynaboard.METRICS],
                   responses={200: LeaderboardSerializer, 400: None})
    def get(self, request, slug: str) -> Response:
        task = self.get_task()
        try:
            weights = dynaboard.viewer_weights(request.query_params, task.typed_config.dynascore.model_dump())
        except dynaboard.WeightsError as error:
            raise serializers.ValidationError({name: [message] for name, message in error.errors.items()}) from error
        return Response(leaderboard.leaderboard(task, weights, predictions.leaderboard_rows))


class DashboardView(TaskView):
    @extend_schema(
        summary="The task's dashboard: figures per round, fooling over time, labels, ensembles, annotators",
        parameters=[OpenApiParameter("round", int, description="the round of the time series (default: the latest)")],
        responses={200: DashboardSerializer, 400: None},
    )
    def get(self, request, slug: str) -> Response:
        number = whole_number(request.query_params.get("round"), "round")
        return Response(dashboard.dashboard(self.get_task(), number))


class ArmsComparisonView(TaskView):
    """The study's arms compared (researchers, owners, admins): rounds.arms."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(
        summary="The study's arms compared: MER, vMER, rejection rate and time per example with intervals and tests",
        parameters=[OpenApiParameter("round", int, description="one round (default: every round)")],
        responses={200: ArmsComparisonSerializer, 400: None, 403: None},
    )
    def get(self, request, slug: str) -> Response:
        task = self.get_task()
        number = whole_number(request.query_params.get("round"), "round")
        return Response(arms.comparison(task, number))


class ModelUploadView(TaskView):
    """GET: uploaded models of the task. POST (researchers, owners, admins; multipart): `name`, optional
    `description`, and `files` (config.json, model.safetensors, tokenizer files). Refusals answer 400 with
    one message per problem."""

    parser_classes = [MultiPartParser, FormParser, BoundedJSONParser]

    def get_permissions(self):
        if self.request.method == "POST":
            return [IsAuthenticated(), IsResearcher()]
        return super().get_permissions()

    @extend_schema(summary="Models uploaded for the task", responses={200: UploadListSerializer})
    def get(self, request, slug: str) -> Response:
        rows = ResearcherModel.objects.filter(task=self.get_task()).select_related("task", "uploaded_by")
        return Response({"uploads": [upload_payload(u) for u in rows]})

    @extend_schema(summary="Upload a model (weights only: safetensors, config.json, tokenizer files)",
                   request={"multipart/form-data": UploadRequestSerializer},
                   responses={201: UploadSerializer, 400: None, 403: None, 413: None})
    def post(self, request, slug: str) -> Response:
        data, files = request.data, request.FILES.getlist("files")
        bodylimit.check(request)  # an upload stopped at the cap: 413, nothing was stored
        check_optional_text(data.get("name"), "name")  # the text rule (dynabench_site.text); blank: uploads says so
        check_optional_text(data.get("description"), "description")
        upload = uploads.submit(self.get_task(), request.user, data.get("name", ""), files, data.get("description", ""))
        upload.refresh_from_db()
        return Response(upload_payload(upload), status=status.HTTP_201_CREATED)


class UploadEnsembleView(APIView):
    """POST {"include": true|false} (owners, admins): add an evaluated upload to the next round's ensemble."""

    permission_classes = [IsAuthenticated]

    @extend_schema(summary="Add an evaluated upload to the next round's ensemble, or take it out",
                   request=IncludeSerializer, responses={200: UploadSerializer, 400: None, 403: None, 404: None})
    def post(self, request, pk: int) -> Response:
        upload = get_object_or_404(ResearcherModel.objects.select_related("task", "uploaded_by"), pk=pk)
        body = IncludeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        uploads.set_in_next_ensemble(upload, request.user, body.validated_data["include"])
        return Response(upload_payload(upload))


class RetrainFromSerializer(serializers.Serializer):
    retrain_from = serializers.BooleanField(
        help_text="true: the next round's models are trained from this upload (its weights; a new head for the task's "
                  "labels); false: stop (the task's encoder goes back to the default, if it names this upload)")


class UploadRetrainFromSerializer(UploadSerializer):
    retrain_from = serializers.BooleanField(help_text="the next round's models are trained from this upload")
    encoder = serializers.CharField(allow_blank=True, help_text="the task's retraining.encoder now (empty: the default)")


class UploadRetrainFromView(APIView):
    """POST {"retrain_from": true|false} (owners, admins): train the next round's models from an evaluated upload
    (the task's retraining.encoder becomes upload:<id>), or stop."""

    permission_classes = [IsAuthenticated]

    @extend_schema(summary="Train the next round's models from an evaluated upload, or stop",
                   request=RetrainFromSerializer,
                   responses={200: UploadRetrainFromSerializer, 400: None, 403: None, 404: None})
    def post(self, request, pk: int) -> Response:
        upload = get_object_or_404(ResearcherModel.objects.select_related("task", "uploaded_by"), pk=pk)
        body = RetrainFromSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        upload = uploads.retrain_from(upload, request.user, body.validated_data["retrain_from"])
        return Response({**upload_payload(upload), "retrain_from": uploads.trains_from(upload.task) == upload.pk,
                         "encoder": upload.task.typed_config.retraining.encoder or ""})


class UploadActionView(APIView):
    """POST (owners, admins): retry or abandon a researcher model's evaluation."""

    permission_classes = [IsAuthenticated]
    http_method_names = ["post", "options"]
    action = "retry"

    def post(self, request, pk: int) -> Response:
        upload = get_object_or_404(ResearcherModel.objects.select_related("task", "uploaded_by"), pk=pk)
        if not can_manage(request.user, upload.task):
            raise PermissionDenied("Only the task's owners and admins may retry or abandon a model's evaluation.")
        act = uploads.retry_evaluation if self.action == "retry" else uploads.abandon_evaluation
        upload = act(upload, request.user)
        return Response(upload_payload(upload), status=status.HTTP_202_ACCEPTED if self.action == "retry" else 200)


class UploadRetryView(UploadActionView):
    action = "retry"

    @extend_schema(summary="Evaluate a failed or stuck upload again", request=None,
                   responses={202: UploadSerializer, 403: None, 404: None, 409: None})
    def post(self, request, pk: int) -> Response:
        return super().post(request, pk)


class UploadAbandonView(UploadActionView):
    action = "abandon"

    @extend_schema(summary="Abandon a failed or stuck upload's evaluation", request=None,
                   responses={200: UploadSerializer, 403: None, 404: None, 409: None})
    def post(self, request, pk: int) -> Response:
        return super().post(request, pk)
