"""The embedded default: models loaded once into this process and kept in memory.

torch comes with the first model loaded (`zoo.runtime`), not with this module: the backend registry
(`zoo.serving.BACKENDS`) is read by the site's settings. Models load on the device policy's device
(`Predictor.load`: ZOO_DEVICE, a GPU when there is one under `auto`); ZOO_DEVICE=cuda where torch sees no CUDA
is a non-retryable `BackendError` carrying `zoo.device.DeviceError`'s reason, never a silent CPU run.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from zoo.serving.base import Backend, BackendError, ModelRef

if TYPE_CHECKING:
    from zoo.runtime import Predictor


class InProcessBackend(Backend):
    name = "inprocess"

    def __init__(self) -> None:
        self._cache: dict[tuple[int, str], Predictor] = {}
        self._lock = threading.Lock()

    def predictor(self, ref: ModelRef) -> Predictor:
        key = (ref.id, str(ref.path))
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        with self._lock:  # one load per model even when requests race
            if key not in self._cache:
                self._cache[key] = self._load(ref)
            return self._cache[key]

    @staticmethod
    def _load(ref: ModelRef) -> Predictor:
        from zoo.runtime import Predictor

        if not (ref.path / "zoo.json").is_file():
            raise BackendError(f"model {ref.name}: no artifact at {ref.path}", retryable=False)
        try:
            return Predictor.load(ref.path)
        except Exception as exc:  # a broken artifact: retrying cannot help
            raise BackendError(f"model {ref.name} failed to load: {exc}", retryable=False) from exc

    def predict(self, models: list[ModelRef], inputs: list[dict[str, str]]) -> list[list[dict[str, Any]]]:
        """Members that share a frozen trunk (cached-top) run it once for the batch (`runtime.ensemble`)."""
        if len(models) == 1:
            return [self._call(models[0], lambda p: p.predict(inputs))]
        members = self.ensemble(models)
        return self._call(models[0], lambda _: members.predict(inputs), name=", ".join(ref.name for ref in models))

    def ensemble(self, models: list[ModelRef]) -> Any:
        """The loaded members as a `trunk.SharedEnsemble` (which trunks they share is found once per set of
        loaded models and remembered)."""
        from zoo.runtime import ensemble

        return ensemble([self.predictor(ref) for ref in models])

    def explain(self, model: ModelRef, model_input: dict[str, str], method: str, target: Any = None) -> dict[str, Any]:
        return self._call(model, lambda p: p.explain(model_input, method, target))

    def explain_ensemble(self, models: list[ModelRef], model_input: dict[str, str], method: str,
                         target: Any = None) -> dict[str, Any]:
        """One forward batch per member (occlusion) over the loaded members: `explain.explain_ensemble` (a
        shared frozen trunk runs once for the batch)."""
        if not models:
            raise BackendError("an ensemble explanation needs at least one model", retryable=False)
        from zoo.runtime import explain_ensemble

        predictors = self.ensemble(models)
        return self._call(models[0], lambda _: explain_ensemble(predictors, model_input, method, target),
                          name=", ".join(ref.name for ref in models))

    def _call(self, ref: ModelRef, action: Any, name: str | None = None) -> Any:
        predictor = self.predictor(ref)
        name = name or ref.name
        try:
            return action(predictor)
        except (KeyError, ValueError, TypeError) as exc:
            raise BackendError(f"model {name} cannot take this input: {exc}", retryable=False) from exc
        except BackendError:
            raise
        except Exception as exc:  # callers handle one error type; a model that crashes will crash again
            raise BackendError(f"model {name} failed: {type(exc).__name__}: {exc}", retryable=False) from exc

    def prepare(self, models: list[ModelRef]) -> None:
        for ref in models:
            self.predictor(ref)

    def release(self, models: list[ModelRef]) -> None:
        with self._lock:
            for ref in models:
                self._cache.pop((ref.id, str(ref.path)), None)
