"""TorchServe over HTTP: one client class with one typed error, and the backend built on it.

`TorchServeError.retryable` is True when trying again later can help (server down or starting, workers
loading, overloaded) and False when it cannot (bad input, a broken model handler).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from modelzoo.archive import build_mar
from modelzoo.serving.base import Backend, BackendError, ModelRef

RETRYABLE_STATUS = {408, 429, 502, 503, 504, 507}


class TorchServeError(BackendError):
    def __init__(self, message: str, *, retryable: bool, status: int | None = None):
        super().__init__(message, retryable=retryable)
        self.status = status


class TorchServeClient:
    """The inference and management APIs. Every failure is a TorchServeError."""

    def __init__(self, inference_url: str, management_url: str, timeout: float = 30.0):
        self.inference_url, self.management_url = inference_url.rstrip("/"), management_url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=16, pool_maxsize=64)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def request(self, method: str, url: str, timeout: float | None = None, **kwargs: Any) -> Any:
        try:
            response = self.session.request(method, url, timeout=timeout or self.timeout, **kwargs)
        except requests.Timeout as exc:
            raise TorchServeError(f"TorchServe timed out: {method} {url}", retryable=True) from exc
        except requests.RequestException as exc:
            raise TorchServeError(f"TorchServe unreachable at {url}: {exc.__class__.__name__}", retryable=True) from exc
        if response.status_code >= 400:
            raise TorchServeError(
                f"TorchServe {method} {url} answered {response.status_code}: {response.text[:300]}",
                retryable=response.status_code in RETRYABLE_STATUS, status=response.status_code,
            )
        try:
            return response.json()
        except ValueError as exc:
            raise TorchServeError(f"TorchServe sent a body that is not JSON from {url}", retryable=False) from exc

    # inference API
    def ping(self) -> bool:
        try:
            return self.request("GET", f"{self.inference_url}/ping", timeout=2).get("status") == "Healthy"
        except TorchServeError:
            return False

    def predict(self, name: str, inputs: list[dict[str, str]]) -> list[dict[str, Any]]:
        reply = self.request("POST", f"{self.inference_url}/predictions/{name}", json={"inputs": inputs})
        predictions = reply.get("predictions") if isinstance(reply, dict) else None
        if not isinstance(predictions, list) or len(predictions) != len(inputs):
            raise TorchServeError(f"model {name} answered an unexpected body: {str(reply)[:200]}", retryable=False)
        return predictions

    def explain(self, name: str, model_input: dict[str, str], method: str, target: Any = None) -> dict[str, Any]:
        body = {"input": model_input, "method": method, "target": target}
        return self.request("POST", f"{self.inference_url}/explanations/{name}", json=body)

    # management API
    def register(self, archive: str, name: str, *, batch_size: int = 1, max_batch_delay_ms: int = 5,
                 workers: int = 1, response_timeout_s: int = 60) -> dict[str, Any]:
        params = {"url": archive, "model_name": name, "batch_size": batch_size, "max_batch_delay": max_batch_delay_ms,
                  "initial_workers": workers, "synchronous": "true", "response_timeout": response_timeout_s}
        return self.request("POST", f"{self.management_url}/models", params=params, timeout=180)

    def scale(self, name: str, workers: int) -> dict[str, Any]:
        params = {"min_worker": workers, "max_worker": workers, "synchronous": "true"}
        return self.request("PUT", f"{self.management_url}/models/{name}", params=params, timeout=180)

    def unregister(self, name: str) -> dict[str, Any]:
        return self.request("DELETE", f"{self.management_url}/models/{name}", timeout=60)

    def describe(self, name: str) -> list[dict[str, Any]]:
        return self.request("GET", f"{self.management_url}/models/{name}")

    def is_registered(self, name: str) -> bool:
        try:
            self.describe(name)
        except TorchServeError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def wait_ready(self, name: str, timeout_s: float = 120.0) -> None:
        """Requests sent while workers load wait for them; poll until at least one worker is READY."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            workers = [w for d in self.describe(name) for w in d.get("workers", [])]
            if any(w.get("status") == "READY" for w in workers):
                return
            time.sleep(0.25)
        raise TorchServeError(f"model {name}: no worker READY after {timeout_s:.0f} s", retryable=True)


class TorchServeBackend(Backend):
    """Each ensemble member is one TorchServe model (one .mar); members are asked in parallel. A model that
    TorchServe does not know yet is archived and registered on first use."""

    name = "torchserve"

    def __init__(self, client: TorchServeClient, archive_dir: Path, batch_size: int = 8, max_batch_delay_ms: int = 5,
                 workers: int = 1):
        self.client, self.archive_dir = client, Path(archive_dir)
        self.batch_size, self.max_batch_delay_ms, self.workers = batch_size, max_batch_delay_ms, workers
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="torchserve")

    @classmethod
    def from_settings(cls) -> TorchServeBackend:
        from django.conf import settings  # here only: the client and backend work without Django settings

        client = TorchServeClient(settings.TORCHSERVE_URL, settings.TORCHSERVE_MANAGEMENT_URL)
        return cls(client, Path(settings.MODEL_STORE) / "torchserve",
                   batch_size=getattr(settings, "TORCHSERVE_BATCH_SIZE", 8),
                   max_batch_delay_ms=getattr(settings, "TORCHSERVE_MAX_BATCH_DELAY_MS", 5),
                   workers=getattr(settings, "TORCHSERVE_WORKERS", 1))

    def predict(self, models: list[ModelRef], inputs: list[dict[str, str]]) -> list[list[dict[str, Any]]]:
        if len(models) == 1:
            return [self._with_registration(models[0], lambda: self.client.predict(models[0].serving_name, inputs))]
        futures = [self.pool.submit(self._with_registration, m, lambda m=m: self.client.predict(m.serving_name, inputs))
                   for m in models]
        return [f.result() for f in futures]

    def explain(self, model: ModelRef, model_input: dict[str, str], method: str, target: Any = None) -> dict[str, Any]:
        return self._with_registration(model, lambda: self.client.explain(model.serving_name, model_input, method, target))

    def _with_registration(self, ref: ModelRef, call: Any) -> Any:
        try:
            return call()
        except TorchServeError as exc:
            if exc.status != 404:
                raise
        self.prepare([ref])
        return call()

    def prepare(self, models: list[ModelRef]) -> None:
        for ref in models:
            if not self.client.is_registered(ref.serving_name):
                self.register(ref)
            self.client.wait_ready(ref.serving_name)

    def register(self, ref: ModelRef) -> None:
        mar = self.archive_dir / f"{ref.serving_name}.mar"
        if not mar.is_file():
            build_mar(ref.path, ref.serving_name, self.archive_dir)
        self.client.register(mar.name, ref.serving_name, batch_size=self.batch_size,
                             max_batch_delay_ms=self.max_batch_delay_ms, workers=self.workers)

    def release(self, models: list[ModelRef]) -> None:
        for ref in models:
            try:
                self.client.unregister(ref.serving_name)
            except TorchServeError as exc:
                if exc.status != 404:
                    raise
