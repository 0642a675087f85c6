"""The device policy (ZOO_DEVICE): spellings, what `auto` means here, and CUDA asked for where there is none is a
clear error at load and at a TorchServe worker's start — never a silent CPU run."""

from __future__ import annotations

import pytest
import torch

from tests.modelzoo.test_families_serving import FakeContext, ensemble_dir, load_handler_class
from zoo import device
from zoo.runtime import Predictor

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this host has CUDA")


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    from modelzoo.testing import tiny_artifact

    return tiny_artifact(tmp_path_factory.mktemp("device") / "cls", "classification", ["pos", "neg"])


@pytest.mark.parametrize("spelling", ["cpu", " CPU ", "Cpu"])
def test_cpu_is_read_in_any_case(spelling):
    assert device.resolve(spelling) == torch.device("cpu")


@pytest.mark.parametrize("spelling", ["gpu", "cuda:", "cuda:x", "cuda0", "cpu:0", "mps", "cuda:-1", "auto cpu", "tpu"])
def test_bad_spellings_are_refused_naming_the_accepted_ones(spelling):
    with pytest.raises(device.DeviceError, match="auto, cpu, cuda, cuda:N"):
        device.resolve(spelling)


def test_bad_spellings_are_refused_from_the_environment_too(monkeypatch):
    monkeypatch.setenv("ZOO_DEVICE", "gpu")
    with pytest.raises(device.DeviceError, match="ZOO_DEVICE='gpu'"):
        device.resolve()


@no_cuda
@pytest.mark.parametrize("value", [None, "", "auto", "AUTO"])
def test_auto_and_unset_mean_the_cpu_on_a_host_without_cuda(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("ZOO_DEVICE", raising=False)
    else:
        monkeypatch.setenv("ZOO_DEVICE", value)
    assert device.resolve() == torch.device("cpu")
    assert device.amp_dtype(device.resolve()) is None


@no_cuda
@pytest.mark.parametrize("value", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_cuda_is_a_device_error_that_says_why(value):
    with pytest.raises(device.DeviceError) as raised:
        device.resolve(value)
    message = str(raised.value)
    assert f"ZOO_DEVICE={value}" in message and "no CUDA device" in message and "ZOO_DEVICE=cpu" in message


@no_cuda
def test_a_worker_given_a_gpu_by_torchserve_computes_on_the_cpu_with_auto_on_a_host_without_cuda(monkeypatch):
    monkeypatch.setenv("ZOO_DEVICE", "auto")
    assert device.pinned(gpu_index=0) == torch.device("cpu")
    monkeypatch.setenv("ZOO_DEVICE", "cpu")
    assert device.pinned(gpu_index=0) == torch.device("cpu")


@no_cuda
def test_predictor_load_with_zoo_device_cuda_and_no_cuda_fails_clearly(monkeypatch, artifact):
    monkeypatch.setenv("ZOO_DEVICE", "cuda")
    with pytest.raises(device.DeviceError, match="ZOO_DEVICE=cuda but torch sees no CUDA device"):
        Predictor.load(artifact)


def test_predictor_load_follows_zoo_device_and_answers_plain_python_values(monkeypatch, artifact):
    monkeypatch.setenv("ZOO_DEVICE", "cpu")
    predictor = Predictor.load(artifact)
    assert predictor.device == torch.device("cpu") and predictor.amp_dtype is None
    [prediction] = predictor.predict([{"text": "fine"}])
    assert all(type(v) is float for v in prediction["probs"].values())
    explanation = predictor.explain({"text": "a fine film"}, "integrated_gradients")
    assert all(type(w["score"]) is float for w in explanation["words"]) and type(explanation["delta"]) is float


@no_cuda
def test_the_in_process_backend_refuses_cuda_where_there_is_none_with_the_reason(monkeypatch, artifact):
    from zoo.serving.base import BackendError, ModelRef
    from zoo.serving.inprocess import InProcessBackend

    monkeypatch.setenv("ZOO_DEVICE", "cuda:0")
    with pytest.raises(BackendError, match="ZOO_DEVICE=cuda:0 but torch sees no CUDA device") as raised:
        InProcessBackend().predict([ModelRef(1, "m", "m", "classification", artifact)], [{"text": "x"}])
    assert not raised.value.retryable


@no_cuda
@pytest.mark.parametrize("gpu_id", [None, 0])
def test_a_torchserve_worker_asked_for_cuda_without_cuda_fails_at_initialize(monkeypatch, artifact, tmp_path, gpu_id):
    import sys

    monkeypatch.setenv("ZOO_DEVICE", "cuda")
    before = list(sys.path)
    try:
        handler = load_handler_class()()
        with pytest.raises(device.DeviceError, match="ZOO_DEVICE=cuda but torch sees no CUDA device"):
            handler.initialize(FakeContext(ensemble_dir(tmp_path, artifact), gpu_id))
        assert not getattr(handler, "initialized", False)
    finally:
        sys.path[:] = before


def test_torchserve_is_configured_with_no_gpu_on_a_cpu_host_or_with_zoo_device_cpu(monkeypatch, tmp_path):
    from zoo.torchserve_ctl import LocalTorchServe

    monkeypatch.setenv("ZOO_DEVICE", "cpu")
    assert "number_of_gpu=0" in LocalTorchServe(tmp_path, tmp_path / "store").config_text().splitlines()
    monkeypatch.setenv("ZOO_DEVICE", "auto")
    expected = torch.cuda.device_count() if torch.cuda.is_available() else 0
    assert f"number_of_gpu={expected}" in LocalTorchServe(tmp_path, tmp_path / "store").config_text().splitlines()
    assert "number_of_gpu=2" in LocalTorchServe(tmp_path, tmp_path / "store", gpus=2).config_text().splitlines()
