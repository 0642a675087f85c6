"""What a pipeline step gets: its run, its row, the options, and ways to report progress and results."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from rounds.models import PipelineRun, PipelineStep
from rounds.options import PipelineOptions

LOG_LIMIT = 20000


@dataclass
class StepContext:
    """What a step function gets: its run, its row, the options, and ways to report."""

    run: PipelineRun
    step: PipelineStep

    @property
    def task(self):
        return self.run.task

    @property
    def options(self) -> PipelineOptions:
        return PipelineOptions.model_validate(self.run.options)

    def log(self, message: str) -> None:
        line = f"{timezone.now():%H:%M:%S} {message}\n"
        self.step.log = (self.step.log + line)[-LOG_LIMIT:]
        PipelineStep.objects.filter(pk=self.step.pk).update(log=self.step.log)
        self._beat()

    def progress(self, fraction: float, message: str = "") -> None:
        self.step.progress = max(0.0, min(1.0, fraction))
        self.step.message = message[:300]
        PipelineStep.objects.filter(pk=self.step.pk).update(progress=self.step.progress, message=self.step.message)
        self._beat()

    def save_result(self, **values: Any) -> None:
        """Keep partial results, so a retry can pick up what an earlier attempt finished."""
        self.step.result = {**self.step.result, **values}
        PipelineStep.objects.filter(pk=self.step.pk).update(result=self.step.result)

    def result_of(self, name: str) -> dict[str, Any]:
        return PipelineStep.objects.get(run=self.run, name=name).result

    def _beat(self) -> None:
        PipelineRun.objects.filter(pk=self.run.pk).update(heartbeat_at=timezone.now())


StepFn = Callable[[StepContext], dict[str, Any] | None]
