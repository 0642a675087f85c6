"""Serving backends: one contract (`base.Backend`), registered here by name, in one place.

Every list of backends follows from `BACKENDS`: the site's MODEL_BACKEND setting accepts its names
(dynabench_site/settings.py), and `make_backend` builds one. Adding a backend is one module with a `Backend`
subclass and one line here. Importing this package loads neither torch nor a model (the in-process backend
imports `zoo.runtime` when it loads its first model): the site's settings read the names.
"""

from __future__ import annotations

from zoo.registry import Registry
from zoo.serving.base import Backend, BackendError, Config, ModelRef, environ
from zoo.serving.inprocess import InProcessBackend
from zoo.serving.torchserve import TorchServeBackend

BACKENDS: Registry[type[Backend]] = Registry("serving backend")
BACKENDS.register(InProcessBackend.name, InProcessBackend)  # models loaded into this process (the default)
BACKENDS.register(TorchServeBackend.name, TorchServeBackend)  # TorchServe over HTTP, one TorchServe model per ensemble
DEFAULT_BACKEND = InProcessBackend.name


def make_backend(name: str, config: Config = environ) -> Backend:
    """A new backend `name`, configured by `config` (`base.environ`: the process environment)."""
    return BACKENDS.lookup(name).from_config(config)


__all__ = ["BACKENDS", "DEFAULT_BACKEND", "Backend", "BackendError", "ModelRef", "environ", "make_backend"]
