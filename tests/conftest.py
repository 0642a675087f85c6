from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests.factories import RoundFactory, TaskFactory
from tests.personas import make_personas


@pytest.fixture
def data_dir() -> Path:
    """The shared real datasets (DATA_DIR, default ../shared/data)."""
    path = Path(settings.DATA_DIR)
    if not path.is_dir():
        pytest.fail(f"DATA_DIR {path} does not exist; point DATA_DIR at the shared datasets")
    return path


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def task(db):
    return TaskFactory(slug="sentiment", kind="sentiment")


@pytest.fixture
def open_round(task):
    return RoundFactory(task=task, number=1)


@pytest.fixture
def personas(task):
    return make_personas(task)


@pytest.fixture
def client_for(personas):
    """An API client logged in as a persona ('anonymous' for none)."""

    def make(name: str) -> APIClient:
        client = APIClient()
        user = personas.get(name)
        if user is not None:
            client.force_authenticate(user)
        return client

    return make
