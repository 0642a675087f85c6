"""Fixtures of the rounds app: a small sentiment task with a pool, a base test set and a collected round 1."""

from __future__ import annotations

import pytest

from annotation.models import Example
from dynabench_site.celery import app
from tests import celeryconf
from tests.factories import ExampleFactory, LabeledItemFactory, RoundFactory, TaskFactory, UserFactory

DOWN_BROKER = "redis://127.0.0.1:1/0"  # nothing listens on port 1
FAST_PIPELINE = {"encoder": "tiny", "seeds": [0, 1], "epochs": 1, "batch_size": 16, "k": 2, "pool_max": 200}
WORDS = {"positive": ["great", "lovely", "superb", "wonderful"], "negative": ["awful", "dreadful", "bad", "boring"]}


@pytest.fixture(autouse=True)
def _fast(settings, tmp_path):
    """Tiny models in a per-test store, run inline; the fast password hasher for personas."""
    from modelzoo.serving import reset_backends

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MODEL_STORE = tmp_path / "models"
    settings.MODEL_BACKEND = "inprocess"
    settings.ROUNDS_PIPELINE = FAST_PIPELINE
    settings.JOB_RUNNER = "inline"
    reset_backends()
    yield
    reset_backends()


def sentence(label: str, n: int) -> str:
    words = WORDS[label]
    return f"the film number {n} was {words[n % len(words)]}"


def fill_task(task, pool: int = 24, test: int = 8, examples: int = 30):
    """A base pool and test set, and a round 1 with verified examples (some fooled, so some land in test)."""
    for n in range(pool):
        label = "positive" if n % 2 else "negative"
        LabeledItemFactory(task=task, split="train", input={"text": sentence(label, n)}, target=label)
    for n in range(test):
        label = "positive" if n % 2 else "negative"
        LabeledItemFactory(task=task, split="test", input={"text": sentence(label, 100 + n)}, target=label)
    round_ = task.rounds.filter(number=1).first() or RoundFactory(task=task, number=1)
    writer = UserFactory(username="writer")
    for n in range(examples):
        label = "positive" if n % 2 else "negative"
        ExampleFactory(round=round_, context=None, author=writer, input={"text": sentence(label, 200 + n)},
                       target=label, fooled=n % 3 != 0, consensus=Example.Consensus.VERIFIED,
                       split="test" if n in (1, 2, 4, 5) else None)  # a stored split never moves: a stable test set
    return round_


@pytest.fixture
def small_task(db):
    task = TaskFactory(slug="small", kind="sentiment")
    fill_task(task)
    return task


@pytest.fixture
def broker_down(settings):
    """A configured broker that is not running (the scale-out mode with Redis down)."""
    settings.JOB_RUNNER, settings.CELERY_TASK_ALWAYS_EAGER = "", False
    saved = celeryconf.update(broker_url=DOWN_BROKER, task_always_eager=False, broker_connection_timeout=1)
    app._pool = None  # forget connections to the previous broker
    app.amqp._producer_pool = None
    yield
    celeryconf.restore(saved)
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def small_sets_decide(monkeypatch):
    """The deploy gate on these tests' tiny test sets (a few rows each) as on sets large enough to decide: by default
    a set under rounds.datasets.MIN_TEST_SIZE rows is shown but never stops a deploy (tests/rounds/test_test_sets.py)."""
    from rounds import datasets

    monkeypatch.setattr(datasets, "MIN_TEST_SIZE", 1)
