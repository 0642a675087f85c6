"""Celery jobs: thin wrappers over modelzoo.services. Training is slow; run it on a worker or from
`manage.py train_model`, never inside a web request."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from modelzoo import data, services
from modelzoo.models import ModelVersion
from tasks.models import Task


@shared_task(name="modelzoo.train_model", acks_late=True, ignore_result=True)
def train_model(task_id: int, spec: dict[str, Any] | None = None, collections: list[str] | None = None,
                include_examples: bool = True, evaluate_on: list[str] | None = None, deploy: bool = False) -> int:
    """Train (reusing an identical earlier artifact, so a redelivered job does no work twice); returns the
    ModelVersion id. With `deploy`, the model becomes the open round's ensemble."""
    task = Task.objects.get(pk=task_id)
    labelled = data.training_set(task, collections, include_examples=include_examples)
    version = services.train_model(task, services.default_spec(task, **(spec or {})), labelled, reuse=True,
                                   evaluate_on=evaluate_on or [])
    if deploy and task.current_round is not None:
        services.deploy_ensemble(task.current_round, [version])
    return version.pk


@shared_task(name="modelzoo.evaluate", ignore_result=True)
def evaluate(model_version_id: int, dataset: str) -> dict[str, float]:
    return services.evaluate(ModelVersion.objects.get(pk=model_version_id), dataset).metrics
