"""The one contract every serving backend keeps; callers (the site's services, registration, health) use
nothing else, and never name a backend.

    predict(models, inputs)                     predictions [model][input]
    explain(model, input, method, target)       one model's word attributions of one input
    explain_ensemble(models, input, ...)        the ensemble's (what a verdict shows); a generic default
    health(ensembles, timeout_s)                can it answer now, and is each ensemble ready to serve
    register(models) -> name                    make an ensemble ready to serve and wait for it (idempotent)
    prepare(models)                             the same when an ensemble is deployed, where a server that is
                                                down is not an error (it registers them when it starts)
    release(models)                             free what register took (a retired model version)
    prune(keep)                                 release every ensemble served except those named in `keep`

A backend is built by `from_config(config)`: `config(name, default)` reads its settings by name (the site
passes its Django settings, a plain script the environment: `environ`). Backends are registered by name in
`zoo.serving.BACKENDS`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.types import BackendError

__all__ = ["OK", "DEGRADED", "DOWN", "Backend", "BackendError", "Config", "ModelRef", "environ"]

OK, DEGRADED, DOWN = "ok", "degraded", "down"
Config = Callable[[str, Any], Any]  # (setting name, default) -> its value


def environ(name: str, default: Any = None) -> Any:
    """A backend's settings read from the process environment (the library used without the site)."""
    return os.environ.get(name, default)


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

    @classmethod
    def from_config(cls, config: Config = environ) -> Backend:
        """A backend configured by `config` (see the module docstring); one that reads no setting needs none."""
        return cls()

    @abstractmethod
    def predict(self, models: list[ModelRef], inputs: list[dict[str, str]]) -> list[list[dict[str, Any]]]:
        """Predictions indexed [model][input]. Raises BackendError."""

    @abstractmethod
    def explain(self, model: ModelRef, model_input: dict[str, str], method: str, target: Any = None) -> dict[str, Any]:
        """Word attributions of one input (runtime.Predictor.explain's result). Raises BackendError."""

    def explain_ensemble(self, models: list[ModelRef], model_input: dict[str, str], method: str,
                         target: Any = None) -> dict[str, Any]:
        """Word attributions of the ensemble's answer over all `models` (`zoo.explain.explain_ensemble`'s
        result). `target` None: the ensemble's own answer, and the members' predictions come back under
        "predictions". This generic default explains each member with `explain` and averages the normalised
        word scores; backends that can run one batch per member (in process, TorchServe) override it.
        Raises BackendError."""
        if not models:
            raise BackendError("an ensemble explanation needs at least one model", retryable=False)
        from zoo.explain import average_explanations, legend  # torch: only when a backend explains
        from zoo.heads import get_head

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

    def health(self, ensembles: Sequence[Sequence[ModelRef]] = (), timeout_s: float = 2.0) -> dict[str, Any]:
        """Whether this backend can answer now: {"status": "ok" | "degraded" | "down", "error"?: str, ...}. A
        backend whose models must be registered before they serve also says, under "ensembles", for each of
        `ensembles` in order, {"served": bool, or None for an ensemble without members, "serving_model": the
        name it is served under, or None}. Never raises; each request it makes waits `timeout_s` at most.
        Default: models are loaded when first asked, so it always answers."""
        return {"status": OK}

    def register(self, models: list[ModelRef]) -> str:
        """Make the ensemble `models` ready to serve and wait until it is (idempotent); returns the name it is
        served under. Raises BackendError. Default: `prepare`."""
        self.prepare(models)
        return ", ".join(m.name for m in models)

    def prepare(self, models: list[ModelRef]) -> None:  # noqa: B027 - optional hook
        """Make the models ready to serve (load, register); called when an ensemble is deployed."""

    def release(self, models: list[ModelRef]) -> None:  # noqa: B027 - optional hook
        """Free what `register` or `prepare` took (unload, unregister)."""

    def prune(self, keep: Collection[str]) -> list[str]:
        """Release every ensemble this backend serves whose name (what `register` returned) is not in `keep`;
        returns the names released. Default: nothing is held apart from what `release` frees."""
        return []

