"""Pipeline options: validated once when a run starts and stored with it, so a retry trains the same way."""

from __future__ import annotations

from typing import Any, Literal

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dynabench_site.errors import InvalidInput
from modelzoo.encoders import EncoderError, validate_encoder
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
    encoder: str | None = Field(
        None, max_length=500,
        description="the base encoder (modelzoo.encoders): a registered name, upload:<id or name> (a model uploaded to "
                    "the task), or a checkpoint folder inside ZOO_ENCODER_DIRS; None: the task's retraining.encoder, "
                    'else the site\'s default; "tiny": a small random one (tests)')
    start_from: Literal["pretrained", "live"] | None = Field(
        None, description='where retraining starts: "pretrained" (the encoder as pretrained, all the data again) or '
                          '"live" (each member continues from the live member); None: the task\'s '
                          "retraining.start_from")
    k: int | None = Field(None, ge=0, le=10000, description="hardness seeds per label; None: the task's seeding.k_per_label")
    pool_max: int | None = Field(None, ge=1, description="pool items scored for hardness (a stable sample); "
                                                        "None: the task's seeding.pool_max")
    retrain_without_new_data: bool | None = Field(
        None, description="retrain although the closing round brought no new training data (None: the task's "
                          "setting, retraining.retrain_without_new_data)")


class BadOptions(InvalidInput):
    def __init__(self, message: str):
        super().__init__(message, field="options")


def pipeline_options(overrides: dict[str, Any] | None = None, task=None) -> PipelineOptions:
    """Defaults, then settings.ROUNDS_PIPELINE, then the caller's overrides. An encoder the site cannot use (an
    unknown name, a folder outside ZOO_ENCODER_DIRS or not a checkpoint, an upload that is not `task`'s) is refused
    with the reason (modelzoo.encoders)."""
    merged = {**settings.ROUNDS_PIPELINE, **(overrides or {})}
    try:
        options = PipelineOptions.model_validate(merged)
    except ValidationError as exc:
        raise BadOptions(pydantic_message(exc)) from None
    if options.encoder is not None:
        try:
            options.encoder = validate_encoder(options.encoder, task)
        except EncoderError as exc:
            raise BadOptions(f"encoder: {exc}") from None
    return options
