"""Fixtures of the create flow: a task of each kind with an open round and contexts, and a writer."""

from __future__ import annotations

import socket

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from modelzoo.serving import reset_backends
from tasks import roles
from tests.factories import ContextFactory, RoundFactory, TaskFactory, UserFactory

SENTIMENT_PROMPT = "The food was good but the service was slow."
NLI_PREMISE = "A man is playing a guitar on stage in front of a large crowd."
QA_PASSAGE = "The Eiffel Tower was completed in 1889 and stands on the Champ de Mars in Paris."


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    """Personas hash a password each; the slow default hasher would dominate these tests."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory):
    """One model store for the session: tiny artifacts are built once per task slug and reused."""
    return tmp_path_factory.mktemp("annotation-models")


@pytest.fixture(autouse=True)
def _in_process_models(settings, tiny_store):
    from modelzoo.serving import reset_backends

    settings.MODEL_STORE = tiny_store
    settings.MODEL_BACKEND = "inprocess"
    reset_backends()
    yield
    reset_backends()


@pytest.fixture
def deploy():
    """Deploy a real tiny ensemble (two untrained models, in process) for a round."""
    from modelzoo.testing import deploy_tiny_ensemble

    return lambda round, members=2: deploy_tiny_ensemble(round, members=members)


@pytest.fixture(autouse=True)
def _fresh_throttles():
    """Throttle counters live in the cache; every test starts with none."""
    cache.clear()
    yield
    cache.clear()


def make_task(kind: str, slug: str | None = None, config: dict | None = None, payload: dict | None = None):
    task = TaskFactory(slug=slug or f"{kind}-task", kind=kind, config=config or {})
    round = RoundFactory(task=task, number=1)
    context = ContextFactory(task=task, round=round, payload=payload or default_payload(kind))
    return task, round, context


def default_payload(kind: str) -> dict:
    return {"nli": {"premise": NLI_PREMISE}, "qa": {"passage": QA_PASSAGE}}.get(kind, {"prompt": SENTIMENT_PROMPT})


@pytest.fixture
def sentiment(db):
    return make_task("sentiment")


@pytest.fixture
def nli(db):
    return make_task("nli")


@pytest.fixture
def qa(db):
    return make_task("qa")


@pytest.fixture
def writer(db):
    user = UserFactory(username="writer")
    roles.grant(user, roles.ANNOTATOR)
    return user


@pytest.fixture
def writer_api(writer) -> APIClient:
    client = APIClient()
    client.force_authenticate(writer)
    return client


def sentiment_body(context, **extra) -> dict:
    return {"context_id": context.pk, "input": {"text": "What a wonderful, slow evening."}, "target": "positive", **extra}


def nli_body(context, **extra) -> dict:
    return {"context_id": context.pk, "input": {"hypothesis": "Nobody is playing music."}, "target": "contradiction", **extra}


def qa_body(context, **extra) -> dict:
    return {
        "context_id": context.pk, "input": {"question": "When was the Eiffel Tower completed?"},
        "target": {"text": "1889", "start": QA_PASSAGE.index("1889")}, **extra,
    }


def closed_port() -> int:
    """A local port nothing listens on (closed again when the probe socket goes)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Outage:
    """Serving pointed at a TorchServe that is not there (the real client gets connection refused), and back."""

    def __init__(self, settings):
        self.settings = settings

    def start(self) -> None:
        self.settings.MODEL_BACKEND = "torchserve"
        self.settings.TORCHSERVE_URL = f"http://127.0.0.1:{closed_port()}"
        self.settings.TORCHSERVE_MANAGEMENT_URL = f"http://127.0.0.1:{closed_port()}"
        reset_backends()

    def end(self) -> None:
        self.settings.MODEL_BACKEND = "inprocess"
        reset_backends()


@pytest.fixture
def outage(settings):
    yield Outage(settings)
    reset_backends()
