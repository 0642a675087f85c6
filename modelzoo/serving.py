"""The site's serving backend: `settings.MODEL_BACKEND` names one of the library's (`zoo.serving.BACKENDS`),
configured from the Django settings and kept for the process."""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings

from zoo import serving
from zoo.serving import Backend, BackendError, ModelRef

_backends: dict[str, Backend] = {}
_lock = threading.Lock()


def setting(name: str, default: Any = None) -> Any:
    """A backend's setting, from the Django settings (the library reads its settings by name: `zoo.serving.base`).
    Every one is defined in dynabench_site/settings.py, so the library's `default` (for its use without the site)
    is not used here."""
    return getattr(settings, name)


def make_backend(name: str) -> Backend:
    """A new backend `name`, configured from the Django settings. A backend's module brings its own dependencies
    when it is first used (models held in this process, or an HTTP client)."""
    return serving.make_backend(name, setting)


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
