from __future__ import annotations

import fcntl
import shutil

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


@pytest.fixture(scope="session")
def torchserve(tmp_path_factory):
    """One real TorchServe for the session, logging to a file, under /tmp/torchserve.lock (one TorchServe per
    host: its worker sockets have fixed names); stopped at the end whatever happens."""
    from modelzoo.torchserve_ctl import LocalTorchServe, free_ports

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
