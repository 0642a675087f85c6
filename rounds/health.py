"""The round pipeline's stuck work in `/healthz` (registered in `RoundsConfig.ready`), by the rules the console
uses: a pipeline run is stuck by `rounds.pipeline.is_stale`, an upload by `rounds.uploads.is_stuck`."""

from __future__ import annotations

from typing import Any

from rounds import uploads
from rounds.models import PipelineRun, ResearcherModel
from rounds.pipeline import is_stale


def stuck_pipelines() -> tuple[list[dict[str, Any]], bool]:
    unfinished = PipelineRun.objects.filter(status__in=[PipelineRun.Status.PENDING, PipelineRun.Status.RUNNING])
    stale = [{"id": run.pk, "task": run.task.slug, "status": run.status}
             for run in unfinished.select_related("task") if is_stale(run)]
    return stale, bool(stale)


def stuck_uploads() -> tuple[int, bool]:
    evaluating = ResearcherModel.objects.filter(status=ResearcherModel.Status.EVALUATING)
    stuck = sum(1 for upload in evaluating if uploads.is_stuck(upload))
    return stuck, bool(stuck)
