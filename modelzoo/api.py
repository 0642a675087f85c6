"""Read-only model registry API: model versions (with evaluations and training progress) and ensembles."""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.permissions import AllowAny

from dynabench_site.params import whole_number
from modelzoo.models import Ensemble, ModelVersion
from modelzoo.serializers import EnsembleSerializer, ModelVersionSerializer
from tasks.access import visible_tasks


class ModelVersionViewSet(viewsets.ReadOnlyModelViewSet):
    """`?task=<slug>` and `?status=<status>` filter."""

    serializer_class = ModelVersionSerializer
    permission_classes = [AllowAny]

    def get_queryset(self):
        rows = ModelVersion.objects.filter(task__in=visible_tasks(self.request.user))
        params = self.request.query_params
        if params.get("task"):
            rows = rows.filter(task__slug=params["task"])
        if params.get("status"):
            rows = rows.filter(status=params["status"])
        return rows.select_related("task").prefetch_related("evaluations")


class EnsembleViewSet(viewsets.ReadOnlyModelViewSet):
    """`?task=<slug>`, `?round=<number>`, `?active=true` filter."""

    serializer_class = EnsembleSerializer
    permission_classes = [AllowAny]

    def get_queryset(self):
        rows = Ensemble.objects.filter(round__task__in=visible_tasks(self.request.user))
        params = self.request.query_params
        if params.get("task"):
            rows = rows.filter(round__task__slug=params["task"])
        if (number := whole_number(params.get("round"), "round")) is not None:
            rows = rows.filter(round__number=number)
        if params.get("active") in ("true", "1"):
            rows = rows.filter(active=True)
        return rows.select_related("round__task")
