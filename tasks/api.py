from __future__ import annotations

from rest_framework import viewsets
from rest_framework.permissions import AllowAny

from tasks.models import Task
from tasks.serializers import TaskDetailSerializer, TaskListSerializer


class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    """Tasks the caller can see; hidden tasks only for their owners and admins."""

    lookup_field = "slug"
    permission_classes = [AllowAny]

    def get_queryset(self):
        return Task.objects.visible_to(self.request.user).filter(active=True).prefetch_related("rounds")

    def get_serializer_class(self):
        return TaskDetailSerializer if self.action == "retrieve" else TaskListSerializer
