from __future__ import annotations

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
