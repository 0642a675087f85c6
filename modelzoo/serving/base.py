"""The serving interface: `predict` for a batch of inputs on several models, `explain` for one input."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelzoo.types import BackendError

__all__ = ["Backend", "BackendError", "ModelRef"]


@dataclass(frozen=True)
class ModelRef:
    """What a backend needs to know about a model version (no database access while serving)."""

    id: int
    name: str
    serving_name: str
    head: str
    path: Path

    @classmethod
    def of(cls, version: Any) -> ModelRef:
        return cls(version.pk, version.name, version.serving_name, version.head, version.artifact_path)


class Backend(ABC):
    name: str

    @abstractmethod
    def predict(self, models: list[ModelRef], inputs: list[dict[str, str]]) -> list[list[dict[str, Any]]]:
        """Predictions indexed [model][input]. Raises BackendError."""

    @abstractmethod
    def explain(self, model: ModelRef, model_input: dict[str, str], method: str, target: Any = None) -> dict[str, Any]:
        """Word attributions of one input (runtime.Predictor.explain's result). Raises BackendError."""

    def prepare(self, models: list[ModelRef]) -> None:  # noqa: B027 - optional hook
        """Make the models ready to serve (load, register); called when an ensemble is deployed."""

    def release(self, models: list[ModelRef]) -> None:  # noqa: B027 - optional hook
        """Free what `prepare` took (unload, unregister)."""
