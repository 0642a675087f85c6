"""bench/bench_gpu.py works before it meets a GPU: it refuses to run on the CPU unless asked for its tiny smoke mode,
and that smoke mode (tiny RoBERTa configs, a few steps) measures every part and writes its report."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_gpu_under_test", ROOT / "bench" / "bench_gpu.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.setenv("ZOO_DEVICE", "cpu")  # main() sets the device policy; restored after the test
    return load_bench()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_it_refuses_to_run_without_cuda_unless_asked_for_the_cpu_smoke_mode(bench, tmp_path, capsys):
    assert bench.main(["--out", str(tmp_path)]) == 2  # default --device cuda: DeviceError, said plainly
    assert "no CUDA device" in capsys.readouterr().err
    assert bench.main(["--device", "cpu", "--out", str(tmp_path)]) == 2  # the CPU without --smoke
    assert "refusing to run without CUDA" in capsys.readouterr().err
    assert not (tmp_path / "gpu.json").exists()


@pytest.mark.integration  # ~9 s on two idle cores, more under load (imports, a tokenizer made in code, 3 artifacts)
def test_the_cpu_smoke_run_measures_training_and_serving_and_writes_its_report(bench, tmp_path):
    assert bench.main(["--device", "cpu", "--smoke", "--skip-torchserve", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "gpu.json").read_text())
    [row] = report["training"]
    assert row["platform"]["examples_per_s"] > 0 and row["bare"]["examples_per_s"] > 0, row
    assert row["ratio"] > 0
    serving = report["serving"]
    assert serving["bare"]["verdicts_per_s"] > 0
    assert serving["inprocess"]["errors"] == 0 and serving["inprocess"]["verdicts_per_s"] > 0
    assert serving["inprocess"]["members_on"] == ["cpu"] * 3
    assert "torchserve" not in serving
    text = (tmp_path / "gpu.md").read_text()
    assert "Round retraining" in text and "in-process" in text


@pytest.mark.integration
def test_the_cpu_smoke_run_serves_the_ensemble_through_a_real_torchserve(bench, tmp_path):
    if not shutil.which("java"):
        pytest.skip("java is not installed; TorchServe needs it")
    with open(bench.LOCK, "a") as lock:  # another TorchServe on this host (the session fixture): do not wait on it
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pytest.skip("another TorchServe holds /tmp/torchserve.lock")
        fcntl.flock(lock, fcntl.LOCK_UN)
    assert bench.main(["--device", "cpu", "--smoke", "--parts", "serving", "--out", str(tmp_path)]) == 0
    served = json.loads((tmp_path / "gpu.json").read_text())["serving"]["torchserve"]
    assert "error" not in served, served
    assert served["errors"] == 0 and served["verdicts_per_s"] > 0 and served["p95_ms"] >= served["p50_ms"]
    assert served["workers_on_gpu"] is False and served["ratio"] > 0
