"""The serving interface: `predict` for a batch of inputs on several models, `explain` for one input on one
model, `explain_ensemble` for one input over all the members of an ensemble (what a verdict shows)."""

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

    def explain_ensemble(self, models: list[ModelRef], model_input: dict[str, str], method: str,
                         target: Any = None) -> dict[str, Any]:
        """Word attributions of the ensemble's answer over all `models` (`modelzoo.explain.explain_ensemble`'s
        result). `target` None: the ensemble's own answer, and the members' predictions come back under
        "predictions". This generic default explains each member with `explain` and averages the normalised
        word scores; backends that can run one batch per member (in process, TorchServe) override it.
        Raises BackendError."""
        if not models:
            raise BackendError("an ensemble explanation needs at least one model", retryable=False)
        from modelzoo.explain import average_explanations, legend  # torch: only when a backend explains
        from modelzoo.heads import get_head

        predictions = None
        if target is None:
            predictions = [per_input[0] for per_input in self.predict(models, [model_input])]
            target = get_head(models[0].head).ensemble_target(predictions)
        results = [self.explain(ref, model_input, method, target) for ref in models]
        merged = average_explanations(results)
        merged["members"] = len(models)
        if isinstance(target, dict):  # a QA span: say which one was explained
            merged["span"] = [target["start"], target["end"]]
        merged["legend"] = legend(method, merged, get_head(models[0].head), len(models))
        if predictions is not None:
            merged["predictions"] = predictions
        return merged

    def prepare(self, models: list[ModelRef]) -> None:  # noqa: B027 - optional hook
        """Make the models ready to serve (load, register); called when an ensemble is deployed."""

    def release(self, models: list[ModelRef]) -> None:  # noqa: B027 - optional hook
        """Free what `prepare` took (unload, unregister)."""

