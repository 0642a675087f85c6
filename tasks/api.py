from __future__ import annotations

from rest_framework import viewsets
from rest_framework.permissions import AllowAny

from tasks.access import visible_tasks
from tasks.serializers import TaskDetailSerializer, TaskListSerializer


class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    """Tasks the caller can see (`tasks.access`): hidden or inactive ones only for their owners and admins."""

    lookup_field = "slug"
    permission_classes = [AllowAny]

    def get_queryset(self):
        return visible_tasks(self.request.user).prefetch_related("rounds")

    def get_serializer_class(self):
        return TaskDetailSerializer if self.action == "retrieve" else TaskListSerializer
