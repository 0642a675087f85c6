"""Backends: registered by name in one place (`zoo.serving.BACKENDS`), every list follows from it, and the site
(health, registration) asks them through the one contract without naming any."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from dynabench_site.env import env_choice
from dynabench_site.errors import Unavailable, as_domain_error
from modelzoo import registration
from modelzoo.serving import make_backend
from zoo import serving
from zoo.serving.base import Backend, ModelRef
from zoo.serving.inprocess import InProcessBackend
from zoo.serving.torchserve import TorchServeBackend, TorchServeClient, TorchServeError
from zoo.types import BackendError, NoEnsembleYet

A, B, C = (ModelRef(i, f"m{i}", f"sentiment-v{i}", "classification", Path("/nonexistent")) for i in (4, 5, 6))


def test_the_settings_accept_exactly_the_registered_backends(settings):
    assert list(serving.BACKENDS) == ["inprocess", "torchserve"]
    assert settings.MODEL_BACKEND in serving.BACKENDS
    assert env_choice("MODEL_BACKEND", "inprocess", list(serving.BACKENDS), environ={"MODEL_BACKEND": "torchserve"})
    with pytest.raises(ImproperlyConfigured, match="is not one of: inprocess, torchserve"):
        env_choice("MODEL_BACKEND", "inprocess", list(serving.BACKENDS), environ={"MODEL_BACKEND": "onnx"})
    assert all(issubclass(cls, Backend) and cls.name == name for name, cls in serving.BACKENDS.items())


def test_a_backend_reads_its_settings_by_name_from_the_site_or_the_environment(settings, monkeypatch):
    settings.TORCHSERVE_URL, settings.TORCHSERVE_MANAGEMENT_URL = "http://ts:1/", "http://ts:2"
    settings.MODEL_STORE, settings.TORCHSERVE_BATCH_SIZE = "/models", 3
    backend = make_backend("torchserve")
    assert isinstance(backend, TorchServeBackend)
    assert (backend.client.inference_url, backend.client.management_url) == ("http://ts:1", "http://ts:2")
    assert backend.archive_dir == Path("/models/torchserve") and backend.batch_size == 3
    monkeypatch.setenv("TORCHSERVE_URL", "http://elsewhere:8080")
    monkeypatch.setenv("TORCHSERVE_BATCH_SIZE", "16")
    plain = serving.make_backend("torchserve")  # the library alone: the environment
    assert plain.client.inference_url == "http://elsewhere:8080" and plain.batch_size == 16
    assert isinstance(serving.make_backend("inprocess"), InProcessBackend)
    with pytest.raises(ValueError, match="unknown serving backend 'onnx'; choose one of: inprocess, torchserve"):
        serving.make_backend("onnx")


class FakeClient(TorchServeClient):
    def __init__(self, models: list[str] | None, up: bool = True):
        super().__init__("http://ts:8080", "http://ts:8081")
        self.listed, self.up, self.dropped = models, up, []

    def ping(self) -> bool:
        return self.up

    def request(self, method: str, url: str, timeout: float | None = None, **kwargs: Any) -> Any:
        if self.listed is None:
            raise TorchServeError("answered 401: no token", retryable=False, status=401)
        return {"models": [{"modelName": name} for name in self.listed]}

    def models(self) -> list[str]:
        return list(self.listed or [])

    def unregister(self, name: str) -> dict[str, Any]:
        self.dropped.append(name)
        return {}


def test_torchserve_health_says_whether_it_answers_and_serves_each_ensemble():
    def health(client, ensembles=()):
        return TorchServeBackend(client, Path("/tmp")).health(ensembles, timeout_s=1)

    assert health(FakeClient([], up=False)) == {"status": "down", "error": "TorchServe does not answer at http://ts:8080"}
    refused = health(FakeClient(None))
    assert refused["status"] == "degraded" and "did not list the models" in refused["error"]
    # One served exactly, one through an ensemble holding its member, one without members yet.
    ok = health(FakeClient(["sentiment-ens-4-5", "other"]), [[A, B], [B], []])
    assert ok == {"status": "ok", "registered": ["other", "sentiment-ens-4-5"], "ensembles": [
        {"served": True, "serving_model": "sentiment-ens-4-5"}, {"served": True, "serving_model": "sentiment-ens-4-5"},
        {"served": None, "serving_model": None}]}
    missing = health(FakeClient(["sentiment-ens-4-5"]), [[A, B], [C]])
    assert missing["status"] == "degraded" and missing["ensembles"][1] == {"served": False, "serving_model": None}


def test_in_process_models_are_always_ready_and_hold_nothing_to_prune():
    backend = InProcessBackend()
    assert backend.health([[A]]) == {"status": "ok"}
    assert backend.prune(set()) == []


def test_torchserve_prunes_the_ensembles_not_kept():
    client = FakeClient(["sentiment-ens-4-5", "sentiment-ens-6", "not-an-ensemble"])
    assert TorchServeBackend(client, Path("/tmp")).prune({"sentiment-ens-6"}) == ["sentiment-ens-4-5"]
    assert client.dropped == ["sentiment-ens-4-5"]


class Recording(Backend):
    name = "recording"

    def __init__(self, fail: bool = False):
        self.fail, self.registered, self.pruned = fail, [], []

    def predict(self, models, inputs):
        return [[{"label": "pos"}] for _ in models]

    def explain(self, model, model_input, method, target=None):
        return {}

    def register(self, models):
        if self.fail:
            raise BackendError("the model server is down", retryable=True)
        self.registered.append([m.id for m in models])
        return "ens-" + "-".join(str(m.id) for m in models)

    def prune(self, keep):
        self.pruned.append(set(keep))
        return ["old"]


def version(pk: int) -> SimpleNamespace:
    return SimpleNamespace(pk=pk, name=f"m{pk}", serving_name=f"sentiment-v{pk}", head="classification",
                           artifact_path=Path("/nonexistent"))


def test_registration_asks_the_configured_backend_through_the_contract(monkeypatch, caplog):
    backend = Recording()
    monkeypatch.setattr(registration, "get_backend", lambda: backend)
    registration.on_ensemble_deployed(None, round="sentiment round 1", versions=[version(4), version(5)])
    assert backend.registered == [[4, 5]]
    assert registration.register_ensemble([version(6)], "r2") == registration.Registered("r2", "ens-6", ["m6"])
    assert registration.prune({"ens-6"}) == ["old"] and backend.pruned == [{"ens-6"}]
    down = Recording(fail=True)
    monkeypatch.setattr(registration, "get_backend", lambda: down)
    registration.on_ensemble_deployed(None, round="sentiment round 1", versions=[version(4)])  # logged, not raised
    assert "could not register the ensemble of sentiment round 1" in caplog.text


def test_a_serving_failure_is_answered_as_the_unavailable_domain_error_it_means():
    retry = as_domain_error(NoEnsembleYet("still training"))
    assert isinstance(retry, Unavailable) and (retry.status_code, retry.code, retry.retry_after) == (503, "unavailable", 5)
    assert retry.message == "still training"
    broken = as_domain_error(TorchServeError("handler crashed", retryable=False, status=500))
    assert (broken.status_code, broken.code, broken.retry_after) == (502, "model_failed", None)
    assert as_domain_error(ValueError("not ours")) is None
