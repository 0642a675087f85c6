from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

import pytest

from modelzoo.serving import reset_backends
from tests.factories import RoundFactory, TaskFactory


@pytest.fixture(autouse=True)
def model_store(settings, tmp_path):
    """Every test writes its artifacts to its own folder and starts with fresh backends."""
    settings.MODEL_STORE = tmp_path / "models"
    settings.MODEL_BACKEND = "inprocess"
    reset_backends()
    yield settings.MODEL_STORE
    reset_backends()


@pytest.fixture
def qa_round(db):
    return RoundFactory(task=TaskFactory(slug="qa", kind="qa"), number=1)


@pytest.fixture
def nli_round(db):
    return RoundFactory(task=TaskFactory(slug="nli", kind="nli"), number=1)


SENTIMENT_LABELS = ["negative", "positive"]


@pytest.fixture(scope="session")
def trained_sentiment(tmp_path_factory):
    """A sentiment classifier fine-tuned from the real encoder on SST-2 *training* rows only (the first 800, one
    epoch; ~30 s on two idle cores), loaded once per session. Returns its runtime.Predictor."""
    import json

    from django.conf import settings as django_settings

    from zoo import training
    from zoo.runtime import Predictor

    path = Path(django_settings.DATA_DIR) / "sst2" / "train.jsonl"
    if not path.is_file():
        pytest.fail(f"{path} is missing; point DATA_DIR at the shared datasets")
    with path.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for _, line in zip(range(800), lines, strict=False)]
    examples = [training.TrainExample({"text": r["sentence"]}, SENTIMENT_LABELS[r["label"]]) for r in rows]
    spec = training.TrainSpec(head="classification", labels=SENTIMENT_LABELS, epochs=1, lr=1e-4, max_length=64, seed=0)
    out = tmp_path_factory.mktemp("trained-sentiment") / "model"
    training.train(examples, spec, out)
    return Predictor.load(out)


@pytest.fixture(scope="session")
def sst2_dev(tmp_path_factory) -> list[dict]:
    """SST-2 dev (evaluation data: never trained on), as {"sentence", "label"} rows."""
    import json

    from django.conf import settings as django_settings

    path = Path(django_settings.DATA_DIR) / "sst2" / "dev.jsonl"
    if not path.is_file():
        pytest.fail(f"{path} is missing; point DATA_DIR at the shared datasets")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
@pytest.fixture(scope="session")
def torchserve(tmp_path_factory):
    """One real TorchServe for the session, logging to a file, under /tmp/torchserve.lock (one TorchServe per
    host: its worker sockets have fixed names); stopped at the end whatever happens."""
    from zoo.torchserve_ctl import LocalTorchServe, free_ports

    if not shutil.which("java"):
        pytest.fail("java is not installed; TorchServe needs it")
    base = tmp_path_factory.mktemp("torchserve")
    with open("/tmp/torchserve.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        server = LocalTorchServe(base / "run", base / "models" / "torchserve", *free_ports(5))
        server.start()
        try:
            yield server
        finally:
            server.stop()
        assert not server.client().ping(), "TorchServe is still answering after --stop"
