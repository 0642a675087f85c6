"""REST API of prediction-file uploads (docs/evaluation/predictions.md).

  GET  /api/tasks/<slug>/predictions/test-sets/   the test sets with their rows' ids, context and input, no labels
  GET  /api/tasks/<slug>/predictions/             the caller's prediction uploads (owners and admins: all)
  POST /api/tasks/<slug>/predictions/             multipart: name, description, file (JSON lines): 201 with the
                                                  report and each set's figures; 400 when no line could be used
                                                  (the report is kept at the upload's URL)
  GET  /api/predictions/<id>/                     one upload: the row-level report and each set's figures

Researchers, task owners and admins only (the people who may upload a model: `rounds.uploads.can_upload`).
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from dynabench_site import bodylimit
from dynabench_site.errors import InvalidInput
from dynabench_site.text import check_optional_text
from rounds import predictions
from rounds.models import PredictionUpload
from tasks.access import TaskScopedMixin
from tasks.permissions import IsResearcher


class PredictionRequestSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="shown on the leaderboard")
    description = serializers.CharField(required=False, allow_blank=True)
    file = serializers.FileField(help_text='JSON lines, one prediction a line: {"id": "item-12", "label": "positive"}'
                                           ' or, for QA, {"id": "example-7", "answer": {"text": ..., "start": ...}}')


class PredictionUploadSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField(help_text="scored, or rejected (no line could be used)")
    rows = serializers.IntegerField(help_text="lines read")
    accepted = serializers.IntegerField(help_text="lines that passed the checks and were scored")
    error_count = serializers.IntegerField()
    errors = serializers.ListField(child=serializers.DictField(), required=False,
                                   help_text="[{line, id, field, code, message}], the first 1000")
    test_sets = serializers.ListField(child=serializers.DictField(),
                                      help_text="per set: status (scored, incomplete, missing), size, covered, "
                                                "missing, figures [{metric, value, low, high}], ranked, stale")


class PredictionUploadListSerializer(serializers.Serializer):
    uploads = PredictionUploadSerializer(many=True)


class TestSetsSerializer(serializers.Serializer):
    line_format = serializers.CharField()
    sets = serializers.ListField(child=serializers.DictField())


def detail_payload(upload: PredictionUpload, *, errors: bool = True, sets: list | None = None) -> dict:
    return {**predictions.payload(upload, errors=errors, sets=sets), "url": reverse("api-prediction-detail", args=[upload.pk]),
            "page": reverse("rounds-predictions-detail", args=[upload.pk])}


class ResearcherTaskView(TaskScopedMixin, APIView):
    permission_classes = [IsAuthenticated, IsResearcher]


class TestSetsView(ResearcherTaskView):
    @extend_schema(summary="The task's test sets with each row's id, context and input (no labels), to predict",
                   parameters=[OpenApiParameter("dataset", str, description="only this test set")],
                   responses={200: TestSetsSerializer, 400: None, 403: None})
    def get(self, request, slug: str) -> Response:
        task = self.get_task()
        wanted = request.query_params.get("dataset")
        described = {c["name"]: c for c in predictions.public_sets(task)}
        if wanted is not None and wanted not in described:
            raise InvalidInput(f"no test set {wanted!r}; the task's test sets are: {', '.join(described) or 'none'}",
                               field="dataset")
        sets = []
        for name, column in described.items():
            if wanted is not None and name != wanted:
                continue
            rows = predictions.set_rows(task, name)
            sets.append({**column, "rows": [predictions.shown(task, r) for r in rows]})
        return Response({"line_format": predictions.line_format(task), "output": predictions.output_kind(task),
                         "labels": getattr(task.typed_config, "labels", None), "sets": sets})


class PredictionListView(ResearcherTaskView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(summary="The caller's prediction uploads for the task (owners and admins: everyone's)",
                   responses={200: PredictionUploadListSerializer, 403: None})
    def get(self, request, slug: str) -> Response:
        task = self.get_task()
        rows = predictions.visible_uploads(request.user, task).prefetch_related("scores")
        sets = predictions.public_sets(task)  # once for the whole list
        return Response({"uploads": [detail_payload(u, errors=False, sets=sets) for u in rows[:200]]})

    @extend_schema(summary="Upload a prediction file: checked line by line, scored on every test set",
                   request={"multipart/form-data": PredictionRequestSerializer},
                   responses={201: PredictionUploadSerializer, 400: None, 403: None, 413: None, 429: None})
    def post(self, request, slug: str) -> Response:
        data = request.data
        bodylimit.check(request)  # an upload stopped at the cap: 413, nothing stored
        check_optional_text(data.get("name"), "name")
        check_optional_text(data.get("description"), "description")
        upload = predictions.submit(self.get_task(), request.user, data.get("name", ""), request.FILES.get("file"),
                                    data.get("description", ""))
        body = detail_payload(upload)
        if upload.status == PredictionUpload.Status.REJECTED:
            return Response({**body, "detail": f"No line could be used ({upload.error}); the report is kept at "
                                               f"{body['url']}.", "code": "invalid"}, status=status.HTTP_400_BAD_REQUEST)
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["url"]})


class PredictionDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(summary="A prediction upload: its row-level report and each test set's status and figures",
                   responses={200: PredictionUploadSerializer, 404: None})
    def get(self, request, pk: int) -> Response:
        upload = predictions.get_visible(request.user, pk)
        return Response(detail_payload(upload))
