from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tasks import guidelines
from tasks.access import TaskScopedMixin, visible_tasks
from tasks.serializers import TaskDetailSerializer, TaskListSerializer


class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    """Tasks the caller can see (`tasks.access`): hidden or inactive ones only for their owners and admins."""

    lookup_field = "slug"
    permission_classes = [AllowAny]

    def get_queryset(self):
        return visible_tasks(self.request.user).prefetch_related("rounds")

    def get_serializer_class(self):
        return TaskDetailSerializer if self.action == "retrieve" else TaskListSerializer


class AcknowledgementSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1, max_value=2**31 - 1, help_text="the version you have read")

    def to_internal_value(self, data):
        if isinstance(data, dict) and set(data) - {"version"}:
            raise serializers.ValidationError({name[:40]: ["is not an accepted field; accepted: version"]
                                               for name in sorted(set(data) - {"version"})[:5]})
        return super().to_internal_value(data)


class GuidelinesAcknowledgeView(TaskScopedMixin, APIView):
    """The answer to a 409 `guidelines` refusal, without leaving the page: the write and validate pages confirm
    in place, so the typed text, the chosen label and the context stay (tasks.guidelines)."""

    permission_classes = [IsAuthenticated]
    http_method_names = ["post", "options"]

    @extend_schema(summary="Confirm that you have read the task's current guidelines", request=AcknowledgementSerializer,
                   responses={200: AcknowledgementSerializer, 400: None, 404: None, 409: None})
    def post(self, request: Request, slug: str) -> Response:
        body = AcknowledgementSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        guidelines.acknowledge(request.user, self.get_task(), body.validated_data["version"])
        return Response({"version": body.validated_data["version"]})
