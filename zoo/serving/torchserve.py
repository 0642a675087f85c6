"""TorchServe over HTTP: one client class with one typed error, and the backend built on it.

`TorchServeError.retryable` is True when trying again later can help (server down or starting, workers
loading, overloaded, a model not registered yet) and False when it cannot (bad input, a broken model handler).

Layout: ONE TorchServe model per ensemble (`ensemble_name`: the task and the member ids, in order), built by
`zoo.archive.build_ensemble_archive`; its one worker holds every member and answers them all in one
request. Registration is eager and idempotent (`prepare` and `register`, called by the site when an ensemble
is deployed and by `manage.py torchserve_register`; a 409 "already registered" is success) and never
happens while serving: `predict` on a model TorchServe does not know raises a retryable error.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from zoo.archive import build_ensemble_archive
from zoo.serving.base import DEGRADED, DOWN, OK, Backend, BackendError, Config, ModelRef, environ

log = logging.getLogger(__name__)
RETRYABLE_STATUS = {408, 429, 502, 503, 504, 507}
ENSEMBLE_MARK = "-ens-"
_ENSEMBLE_IDS = re.compile(r"-ens-(\d+(?:-\d+)*)$")


def ensemble_prefix(model: ModelRef) -> str:
    """`<task slug>-ens-`: what every ensemble model of the task's models starts with."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", model.serving_name.rsplit("-v", 1)[0]) + ENSEMBLE_MARK


def ensemble_name(models: list[ModelRef]) -> str:
    """The TorchServe model of an ensemble: its task and member ids in order, e.g. `sentiment-ens-4-5-6`."""
    return ensemble_prefix(models[0]) + "-".join(str(m.id) for m in models)


def ensemble_ids(name: str) -> list[int] | None:
    """The member ids an ensemble model name stands for (None for any other TorchServe model)."""
    found = _ENSEMBLE_IDS.search(name)
    return [int(i) for i in found.group(1).split("-")] if found else None


class TorchServeError(BackendError):
    def __init__(self, message: str, *, retryable: bool, status: int | None = None):
        super().__init__(message, retryable=retryable)
        self.status = status


class TorchServeClient:
    """The inference and management APIs. Every failure is a TorchServeError."""

    def __init__(self, inference_url: str, management_url: str, timeout: float = 30.0, key_file: str | Path | None = None):
        self.inference_url, self.management_url = inference_url.rstrip("/"), management_url.rstrip("/")
        self.timeout = timeout
        self.key_file = Path(key_file) if key_file else None  # TorchServe's token auth (its key_file.json)
        self._keys: tuple[float, dict[str, str]] = (-1.0, {})
        import requests  # here: the backend registry is read at the site's start-up, which needs no HTTP client

        self.session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=16, pool_maxsize=64)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def request(self, method: str, url: str, timeout: float | None = None, **kwargs: Any) -> Any:
        import requests

        token = self._token(url)
        if token:
            kwargs["headers"] = {**kwargs.get("headers", {}), "Authorization": f"Bearer {token}"}
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

    def _token(self, url: str) -> str | None:
        """The key TorchServe's token auth wants for this API, read from its key file (re-read when it changes:
        TorchServe rotates keys on restart). No key file: token auth is off (loopback in `make serve-prod`)."""
        if self.key_file is None:
            return None
        try:
            mtime = self.key_file.stat().st_mtime
            if mtime != self._keys[0]:
                data = json.loads(self.key_file.read_text(encoding="utf-8"))
                self._keys = (mtime, {api: (data.get(api) or {}).get("key", "") for api in ("management", "inference")})
        except (OSError, ValueError, AttributeError) as exc:
            raise TorchServeError(f"cannot read TorchServe's key file {self.key_file}: {exc}", retryable=True) from exc
        api = "management" if url.startswith(self.management_url) and self.management_url != self.inference_url else "inference"
        return self._keys[1].get(api) or None

    # inference API
    def ping(self) -> bool:
        try:
            return self.request("GET", f"{self.inference_url}/ping", timeout=2).get("status") == "Healthy"
        except TorchServeError:
            return False

    def predict(self, name: str, inputs: list[dict[str, str]]) -> list[dict[str, Any]]:
        """Predictions of a single-member model (the first member of an ensemble model)."""
        return self.predict_members(name, inputs, [0])[0]

    def predict_members(self, name: str, inputs: list[dict[str, str]],
                        members: list[int] | None = None) -> list[list[dict[str, Any]]]:
        """Predictions [member][input] of an ensemble model, for all its members or those at `members`."""
        body: dict[str, Any] = {"inputs": inputs}
        if members is not None:
            body["members"] = members
        reply = self.request("POST", f"{self.inference_url}/predictions/{name}", json=body)
        predictions = reply.get("predictions") if isinstance(reply, dict) else None
        expected = len(members) if members is not None else None
        if (not isinstance(predictions, list) or (expected is not None and len(predictions) != expected)
                or not all(isinstance(p, list) and len(p) == len(inputs) for p in predictions)):
            raise TorchServeError(f"model {name} answered an unexpected body: {str(reply)[:200]}", retryable=False)
        return predictions

    def explain(self, name: str, model_input: dict[str, str], method: str, target: Any = None,
                member: int = 0) -> dict[str, Any]:
        body = {"input": model_input, "method": method, "target": target, "member": member}
        return self.request("POST", f"{self.inference_url}/explanations/{name}", json=body)

    def explain_ensemble(self, name: str, model_input: dict[str, str], method: str, target: Any = None,
                         members: list[int] | None = None) -> dict[str, Any]:
        body = {"input": model_input, "method": method, "target": target, "ensemble": True}
        if members is not None:
            body["members"] = members
        return self.request("POST", f"{self.inference_url}/explanations/{name}", json=body)

    # management API
    def register(self, archive: str, name: str, *, batch_size: int = 1, max_batch_delay_ms: int = 5,
                 workers: int = 1, response_timeout_s: int = 60) -> bool:
        """Register an archive of the model store. Idempotent: True when this call registered it, False when
        TorchServe already had it (409, e.g. two callers racing after a restart: that is success too)."""
        params = {"url": archive, "model_name": name, "batch_size": batch_size, "max_batch_delay": max_batch_delay_ms,
                  "initial_workers": workers, "synchronous": "true", "response_timeout": response_timeout_s}
        try:
            self.request("POST", f"{self.management_url}/models", params=params, timeout=300)
        except TorchServeError as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def models(self) -> list[str]:
        """Names of every registered model."""
        names, token = [], None
        while True:
            params = {"limit": 100, **({"next_page_token": token} if token else {})}
            page = self.request("GET", f"{self.management_url}/models", params=params, timeout=10)
            names += [m["modelName"] for m in page.get("models", [])]
            token = page.get("nextPageToken")
            if not token:
                return names

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

    def wait_healthy(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.ping():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)
        return True


class TorchServeBackend(Backend):
    """One TorchServe model per ensemble (see the module docstring). `predict` on a list of members asks the
    ensemble model registered for exactly that list, or else a registered ensemble model that holds them all
    (its `members` subset: evaluating one member of a deployed ensemble loads nothing new). Never registers
    while serving: a model not registered is a retryable error, registered by `prepare` /
    `manage.py torchserve_register` / the `ensemble_deployed` receiver."""

    name = "torchserve"

    def __init__(self, client: TorchServeClient, archive_dir: Path, batch_size: int = 8, max_batch_delay_ms: int = 5,
                 workers: int = 1):
        self.client, self.archive_dir = client, Path(archive_dir)
        self.batch_size, self.max_batch_delay_ms, self.workers = batch_size, max_batch_delay_ms, workers
        self._routes: dict[tuple[int, ...], tuple[str, list[int] | None]] = {}
        self._routes_lock = threading.Lock()
        self._fanout: ThreadPoolExecutor | None = None

    @classmethod
    def from_config(cls, config: Config = environ) -> TorchServeBackend:
        """Settings by name (the same as the site's and the environment's): TORCHSERVE_URL,
        TORCHSERVE_MANAGEMENT_URL, TORCHSERVE_KEY_FILE, MODEL_STORE (archives go to its `torchserve/` folder),
        TORCHSERVE_BATCH_SIZE, TORCHSERVE_MAX_BATCH_DELAY_MS, TORCHSERVE_WORKERS."""
        client = TorchServeClient(config("TORCHSERVE_URL", "http://127.0.0.1:8080"),
                                  config("TORCHSERVE_MANAGEMENT_URL", "http://127.0.0.1:8081"),
                                  key_file=config("TORCHSERVE_KEY_FILE", None) or None)
        return cls(client, Path(config("MODEL_STORE", "var/models")) / "torchserve",
                   batch_size=int(config("TORCHSERVE_BATCH_SIZE", 8)),
                   max_batch_delay_ms=int(config("TORCHSERVE_MAX_BATCH_DELAY_MS", 5)),
                   workers=int(config("TORCHSERVE_WORKERS", 1)))

    # -- health ---------------------------------------------------------------------------------------

    def health(self, ensembles: Sequence[Sequence[ModelRef]] = (), timeout_s: float = 2.0) -> dict[str, Any]:
        """Down when TorchServe does not answer its ping; degraded when its management API does not list the
        models (token, network) or an ensemble with members is not registered (served by no TorchServe model)."""
        if not self.client.ping():
            return {"status": DOWN, "error": f"TorchServe does not answer at {self.client.inference_url}"}
        try:
            listing = self.client.request("GET", f"{self.client.management_url}/models?limit=1000", timeout=timeout_s)
        except Exception as exc:  # answers predictions, but its management API does not answer us (token, network)
            return {"status": DEGRADED, "error": f"the management API did not list the models: {exc}"[:300]}
        names = sorted(n for n in {m.get("modelName") for m in listing.get("models", [])} if n)
        served: list[dict[str, Any]] = []
        for models in ensembles:
            if not models:  # an open round without models yet (still training): nothing to serve, nothing missing
                served.append({"served": None, "serving_model": None})
                continue
            # One TorchServe model per ensemble (`<task>-ens-<ids>`), or one holding all its members.
            found = self.find_model(list(models), names)
            served.append({"served": found is not None, "serving_model": found[0] if found else None})
        missing = sum(s["served"] is False for s in served)
        return {"status": DEGRADED if missing else OK, "registered": names, "ensembles": served}

    # -- serving (never registers) ------------------------------------------------------------------

    def predict(self, models: list[ModelRef], inputs: list[dict[str, str]]) -> list[list[dict[str, Any]]]:
        try:
            return self._routed(models, lambda name, members: self.client.predict_members(name, inputs, members))
        except TorchServeError as exc:
            if exc.status != 404 or len(models) == 1:
                raise
        # No one TorchServe model holds them all (e.g. the round pipeline's new members, each registered alone
        # by the evaluation, before their ensemble is deployed): ask the models that hold each, in parallel.
        futures = [self._pool().submit(self.predict, [m], inputs) for m in models]
        return [f.result()[0] for f in futures]

    def _pool(self) -> ThreadPoolExecutor:
        with self._routes_lock:
            if self._fanout is None:
                self._fanout = ThreadPoolExecutor(max_workers=8, thread_name_prefix="torchserve")
            return self._fanout

    def explain(self, model: ModelRef, model_input: dict[str, str], method: str, target: Any = None) -> dict[str, Any]:
        return self._routed([model], lambda name, members: self.client.explain(
            name, model_input, method, target, member=(members or [0])[0]))

    def explain_ensemble(self, models: list[ModelRef], model_input: dict[str, str], method: str,
                         target: Any = None) -> dict[str, Any]:
        """The ensemble's explanation in one request (the handler calls zoo.explain.explain_ensemble)."""
        return self._routed(models, lambda name, members: self.client.explain_ensemble(
            name, model_input, method, target, members))

    def _routed(self, models: list[ModelRef], call: Any) -> Any:
        name, members = self.route(models)
        try:
            return call(name, members)
        except TorchServeError as exc:
            if exc.status != 404:
                raise
            self.forget_routes()
            raise self._not_registered(models) from exc

    def route(self, models: list[ModelRef]) -> tuple[str, list[int] | None]:
        """(TorchServe model, member indices or None for all of it) that serves `models`, in their order."""
        key = tuple(m.id for m in models)
        with self._routes_lock:
            if key in self._routes:
                return self._routes[key]
        found = self.find_model(models, self.client.models())
        if found is None:
            raise self._not_registered(models)
        with self._routes_lock:
            self._routes[key] = found
        return found

    @staticmethod
    def find_model(models: list[ModelRef], registered: list[str]) -> tuple[str, list[int] | None] | None:
        """Which of the `registered` TorchServe models serves `models` (and which of its members), or None.
        `health` uses it with the listed models."""
        exact = ensemble_name(models)
        if exact in registered:
            return exact, None
        wanted, prefix = [m.id for m in models], ensemble_prefix(models[0])
        for name in sorted(registered):
            ids = ensemble_ids(name)
            if ids is not None and name.startswith(prefix) and set(wanted) <= set(ids):
                return name, [ids.index(i) for i in wanted]
        return None

    def forget_routes(self) -> None:
        with self._routes_lock:
            self._routes.clear()

    def _not_registered(self, models: list[ModelRef]) -> TorchServeError:
        return TorchServeError(
            f"TorchServe has no model for {', '.join(m.name for m in models)} ({ensemble_name(models)}) yet: it is "
            "registered when its round opens and at TorchServe start (`manage.py torchserve_register`); retry later",
            retryable=True, status=404)

    # -- registration (eager, idempotent) -------------------------------------------------------------

    def prepare(self, models: list[ModelRef]) -> None:
        """Register the ensemble `models` and wait for its worker (one model alone, e.g. to evaluate it, is
        served by a registered ensemble that holds it when there is one). TorchServe being down is not an
        error here: the open rounds' ensembles are registered when it starts (`manage.py torchserve_register`),
        and serving meanwhile answers a retryable error."""
        try:
            self.register(models, exact=len(models) > 1)
        except TorchServeError as exc:
            if exc.retryable and exc.status is None:
                log.warning("TorchServe is not reachable; %s will be registered when it starts: %s",
                            ensemble_name(models), exc)
                return
            raise

    def register(self, models: list[ModelRef], wait_s: float = 300.0, exact: bool = True) -> str:
        """Idempotent: build the archive once, register it (409 is success), wait until a worker is READY.
        `exact=False` accepts a registered ensemble that holds all `models`. Returns the serving model."""
        if not models:
            raise TorchServeError("an ensemble needs at least one model", retryable=False)
        registered = self.client.models()
        found = self.find_model(models, registered)
        name = found[0] if found and (not exact or found[1] is None) else ensemble_name(models)
        if name not in registered:
            archive = build_ensemble_archive([(m.id, m.name, m.path) for m in models], name, self.archive_dir)
            created = self.client.register(archive.name, name, batch_size=self.batch_size,
                                           max_batch_delay_ms=self.max_batch_delay_ms, workers=self.workers)
            log.info("TorchServe model %s %s", name, "registered" if created else "was already registered")
            self.forget_routes()
        self.client.wait_ready(name, wait_s)
        return name

    def release(self, models: list[ModelRef]) -> None:
        """Unregister every ensemble model that holds one of `models` (a retired version)."""
        registered = self.client.models()
        for model in models:
            for name in registered:
                held = ensemble_ids(name)
                if held is not None and name.startswith(ensemble_prefix(model)) and model.id in held:
                    self.unregister(name)

    def prune(self, keep: Collection[str]) -> list[str]:
        """Unregister the ensemble models TorchServe holds that are not in `keep` (ensembles replaced since)."""
        dropped = [name for name in self.client.models() if ensemble_ids(name) is not None and name not in keep]
        for name in dropped:
            self.unregister(name)
        return dropped

    def unregister(self, name: str) -> None:
        try:
            self.client.unregister(name)
        except TorchServeError as exc:
            if exc.status != 404:
                raise
        self.forget_routes()
