"""Pipeline options: validated once when a run starts and stored with it, so a retry trains the same way."""

from __future__ import annotations

from typing import Any, Literal

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dynabench_site.errors import InvalidInput
from tasks.models import pydantic_message
from zoo.recipes import CACHED_TOP, RECIPES


class PipelineOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2], min_length=1, max_length=10)
    epochs: int = Field(2, ge=1, le=20)
    batch_size: int = Field(16, ge=1, le=256)
    recipe: Literal[tuple(RECIPES)] = Field(  # type: ignore[valid-type]
        CACHED_TOP, description="training recipe (zoo.recipes): "
        + "; ".join(f'"{name}" ({about})' for name, about in RECIPES.items()))
    encoder: str | None = Field(None, description='None: the pretrained encoder; "tiny": a small random one (tests)')
    k: int | None = Field(None, ge=0, le=10000, description="hardness seeds per label; None: the task's seeding.k_per_label")
    pool_max: int | None = Field(None, ge=1, description="pool items scored for hardness (a stable sample); "
                                                        "None: the task's seeding.pool_max")
    retrain_without_new_data: bool | None = Field(
        None, description="retrain although the closing round brought no new training data (None: the task's "
                          "setting, retraining.retrain_without_new_data)")


class BadOptions(InvalidInput):
    def __init__(self, message: str):
        super().__init__(message, field="options")


def pipeline_options(overrides: dict[str, Any] | None = None) -> PipelineOptions:
    """Defaults, then settings.ROUNDS_PIPELINE, then the caller's overrides."""
    merged = {**settings.ROUNDS_PIPELINE, **(overrides or {})}
    try:
        return PipelineOptions.model_validate(merged)
    except ValidationError as exc:
        raise BadOptions(pydantic_message(exc)) from None
