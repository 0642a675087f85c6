"""`{% load modelzoo_tags %}`: whether the open round's models are ready, and while they train (e.g. `make run`
training the demo models in the background) how far they are, and that submissions are saved meanwhile:

- `{% model_training task %}` on the task page: the notice with each member's own progress;
- `{% training_notice task %}` on the create page, and `{% training_notice task compact=True %}` on the home
  page's task cards: the notice alone (nothing once the models are ready).

The pages of other apps render it without importing the model zoo."""

from __future__ import annotations

from typing import Any

from django import template

from modelzoo import services
from modelzoo.models import ModelVersion

register = template.Library()


def training_state(task) -> dict[str, Any]:
    """{"ready": bool, "training": [versions], "percent": int | None} for the task's open round."""
    round_ = task.current_round
    if task.kind_impl.generative:  # a chat task's models are language models: nothing to train or deploy
        return {"ready": round_ is not None, "training": [], "percent": None}
    if round_ is None or services.active_ensemble(round_) is not None:
        return {"ready": round_ is not None, "training": [], "percent": None}
    training = list(ModelVersion.objects.filter(task=task, status=ModelVersion.Status.TRAINING).order_by("version"))
    percent = round(100 * sum(v.progress for v in training) / len(training)) if training else None
    return {"ready": False, "training": training, "percent": percent}


@register.inclusion_tag("modelzoo/_model_training.html")
def model_training(task) -> dict[str, Any]:
    return {"task": task, **training_state(task)}


@register.inclusion_tag("modelzoo/_training_notice.html")
def training_notice(task, compact: bool = False) -> dict[str, Any]:
    return {"task": task, "compact": compact, **training_state(task)}
