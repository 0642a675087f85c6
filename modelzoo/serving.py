"""Serving backends behind one interface; `settings.MODEL_BACKEND` picks one ('inprocess' | 'torchserve')."""

from __future__ import annotations

import threading

from django.conf import settings

from modelzoo.serving.base import Backend, BackendError, ModelRef

_backends: dict[str, Backend] = {}
_lock = threading.Lock()


def make_backend(name: str) -> Backend:
    # A backend's module is imported when it is chosen: a process uses one, and each brings its own
    # dependencies (models held in this process, or an HTTP client).
    if name == "inprocess":
        from modelzoo.serving.inprocess import InProcessBackend

        return InProcessBackend()
    if name == "torchserve":
        from modelzoo.serving.torchserve import TorchServeBackend

        return TorchServeBackend.from_settings()
    raise ValueError(f"unknown MODEL_BACKEND {name!r}; expected 'inprocess' or 'torchserve'")


def get_backend(name: str | None = None) -> Backend:
    """The process-wide backend (models stay cached between calls)."""
    name = name or settings.MODEL_BACKEND
    with _lock:
        if name not in _backends:
            _backends[name] = make_backend(name)
        return _backends[name]


def reset_backends() -> None:
    """Forget cached backends (tests, or after settings change)."""
    with _lock:
        _backends.clear()


__all__ = ["Backend", "BackendError", "ModelRef", "get_backend", "make_backend", "reset_backends"]
