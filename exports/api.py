"""Dataset downloads over the REST API. Files stream; nothing is built in memory."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import api as token_api
from accounts.authentication import ApiTokenAuthentication
from accounts.models import ApiToken
from exports import access, services
from exports.formats import DEFAULT_FORMAT, FORMATS
from exports.models import DatasetSnapshot
from exports.serializers import PublishSerializer, SnapshotListSerializer, SnapshotSerializer
from tasks.access import TaskScopedMixin
from tasks.models import Task
from tasks.roles import can_manage

# Tokens first: their 401 answers carry "WWW-Authenticate: Token".
AUTHENTICATION = [ApiTokenAuthentication, SessionAuthentication]


class IgnoreFormatParameter(DefaultContentNegotiation):
    """`?format=` names the dataset's file format here, not a DRF renderer."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def download_response(download: services.Download) -> StreamingHttpResponse:
    response = StreamingHttpResponse(download.chunks, content_type=download.media_type)
    response["Content-Disposition"] = f'attachment; filename="{download.filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    if download.size is not None:
        response["Content-Length"] = str(download.size)
    if download.sha256:
        response["ETag"] = f'"{download.sha256}"'
        response["X-Checksum-SHA256"] = download.sha256
    return response


class TaskDatasetView(TaskScopedMixin, APIView):
    """Bad requests for data (round, version, split, format) answer 400 from the services' ExportError."""

    authentication_classes = AUTHENTICATION
    permission_classes = [AllowAny]
    content_negotiation_class = IgnoreFormatParameter

    def get_round(self, task: Task):
        return services.find_round(task, self.kwargs["number"])

    def snapshot_for(self, round, version: str) -> DatasetSnapshot:
        snapshot = services.find_snapshot(round, version)
        if not access.can_download(self.request.user, snapshot):
            raise PermissionDenied("This snapshot is for researchers, the task's owners and admins.")
        return snapshot

    def require_manager(self, task: Task) -> None:
        if not can_manage(self.request.user, task):
            raise PermissionDenied("Only the task's owners and admins may use unpublished (live) data.")


FILE_PARAMS = [
    OpenApiParameter("format", str, enum=list(FORMATS), description=f"file format (default {DEFAULT_FORMAT})"),
    OpenApiParameter("split", str, enum=["train", "dev", "test"], description="default train"),
    OpenApiParameter("version", str, description="latest (default), a version number, or live (owners)"),
]


class DatasetListView(TaskDatasetView):
    """GET /api/tasks/{slug}/datasets/: the task's published snapshots, newest version first per round."""

    @extend_schema(responses=SnapshotListSerializer)
    def get(self, request, slug: str) -> Response:
        task = self.get_task()
        snapshots = DatasetSnapshot.objects.filter(task=task).select_related("round", "task")
        allowed = {s.pk for s in access.downloadable(request.user, task)}
        data = SnapshotSerializer(snapshots, many=True, context={"request": request, "allowed": allowed}).data
        return Response(
            {
                "task": task.slug,
                "count": len(data),
                "can_use_live": can_manage(request.user, task),
                "results": data,
            }
        )


class RoundDatasetView(TaskDatasetView):
    """GET …/rounds/{n}/dataset/?format=<a registered format>&split=train|dev|test&version=latest|N|live"""

    @extend_schema(parameters=FILE_PARAMS, responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request, slug: str, number: str) -> StreamingHttpResponse:
        task = self.get_task()
        round = self.get_round(task)
        fmt = request.query_params.get("format", DEFAULT_FORMAT)
        split = request.query_params.get("split", "train")
        version = request.query_params.get("version", "latest")
        if version == "live":
            self.require_manager(task)
            return download_response(services.live_file(round, split, fmt))
        return download_response(services.snapshot_file(self.snapshot_for(round, version), split, fmt))


class RoundBundleView(TaskDatasetView):
    """GET …/rounds/{n}/bundle/?version=latest|N|live: the zip (files, README.md card, SHA256SUMS)."""

    @extend_schema(parameters=FILE_PARAMS[2:], responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request, slug: str, number: str) -> StreamingHttpResponse:
        task = self.get_task()
        round = self.get_round(task)
        version = request.query_params.get("version", "latest")
        if version == "live":
            self.require_manager(task)
            formats = request.query_params.getlist("formats") or list(services.DEFAULT_FORMATS)
            excluded = request.query_params.get("include_excluded") in ("1", "true", "yes")
            return download_response(services.live_bundle(round, formats, excluded))
        return download_response(services.snapshot_bundle(self.snapshot_for(round, version)))


class PublishView(TaskDatasetView):
    """POST …/rounds/{n}/snapshots/: owners publish the round's current data as a new version."""

    @extend_schema(request=PublishSerializer, responses={200: SnapshotSerializer, 201: SnapshotSerializer})
    def post(self, request, slug: str, number: str) -> Response:
        task = self.get_task()
        round = self.get_round(task)
        if not can_manage(request.user, task):
            raise PermissionDenied("Only the task's owners and admins may publish datasets.")
        options = PublishSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        snapshot, created = services.publish_snapshot(round, request.user, **options.validated_data)
        context = {"request": request, "allowed": {snapshot.pk}}
        return Response(SnapshotSerializer(snapshot, context=context).data, status=201 if created else 200)


class TokenListView(token_api.TokenListView):
    """GET/POST /api/tokens/readonly/: your read-only tokens; the key is shown once, on creation."""

    access = ApiToken.Access.READ


class TokenRevokeView(token_api.TokenDetailView):
    """DELETE /api/tokens/readonly/{id}/: revoke one of your read-only tokens."""

    access = ApiToken.Access.READ
