from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from modelzoo.serving import get_backend, make_backend, reset_backends
from modelzoo.testing import tiny_artifact
from zoo.runtime import Predictor
from zoo.serving.base import ModelRef
from zoo.serving.inprocess import InProcessBackend
from zoo.types import BackendError

TEXTS = [{"text": f"sentence {i} is {'good' if i % 2 else 'bad'}"} for i in range(12)]


@pytest.fixture
def ref(tmp_path):
    return ModelRef(7, "m", "m-v1", "classification", tiny_artifact(tmp_path / "m", "classification", ["x", "y"]))


def test_concurrent_requests_load_the_model_once_and_agree_with_sequential_ones(ref, monkeypatch):
    loads = []
    real_load = Predictor.load
    monkeypatch.setattr(Predictor, "load", classmethod(lambda cls, path: loads.append(path) or real_load(path)))
    backend = InProcessBackend()
    with ThreadPoolExecutor(8) as pool:
        predictions = list(pool.map(lambda t: backend.predict([ref], [t])[0][0], TEXTS * 3))
        explanations = list(pool.map(lambda t: backend.explain(ref, t, "integrated_gradients", "x"), TEXTS[:4]))
    assert len(loads) == 1
    sequential = backend.predict([ref], TEXTS)[0]
    # Batched and single forward passes differ by float rounding only (padding changes the kernels' order).
    for got, want in zip(predictions, sequential * 3, strict=True):
        assert got["label"] == want["label"]
        assert got["probs"] == pytest.approx(want["probs"], abs=1e-5)
    assert explanations[0] == backend.explain(ref, TEXTS[0], "integrated_gradients", "x")


def test_a_missing_artifact_is_a_permanent_error():
    ref = ModelRef(1, "gone", "gone-v1", "classification", Path("/nonexistent/model"))
    with pytest.raises(BackendError) as err:
        InProcessBackend().predict([ref], TEXTS[:1])
    assert not err.value.retryable


def test_the_backend_is_chosen_by_settings_and_kept(settings):
    settings.MODEL_BACKEND = "inprocess"
    reset_backends()
    assert get_backend() is get_backend()
    assert get_backend().name == "inprocess"
    settings.MODEL_BACKEND = "torchserve"
    assert get_backend().name == "torchserve"
    with pytest.raises(ValueError, match="unknown serving backend"):
        make_backend("onnx")
