from __future__ import annotations

import pytest

from annotation.models import Example
from tests.factories import ExampleFactory, UserFactory, ValidationFactory

PREDICTIONS = [
    {
        "model_version": 1,
        "name": "r1-a",
        "prediction": {"label": "negative", "probs": {"positive": 0.2, "negative": 0.8}},
    },
    {
        "model_version": 1,
        "name": "r1-b",
        "prediction": {"label": "negative", "probs": {"positive": 0.4, "negative": 0.6}},
    },
]


@pytest.fixture(autouse=True)
def exports_dir(settings, tmp_path):
    settings.EXPORTS_DIR = tmp_path / "exports"
    # Hundreds of factory users: the fast hasher keeps the tests quick (no test here is about passwords).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return settings.EXPORTS_DIR


def make_example(round, *, fooled=True, consensus=Example.Consensus.UNVALIDATED, author=None, **extra) -> Example:
    return ExampleFactory(
        round=round,
        author=author or UserFactory(),
        fooled=fooled,
        consensus=consensus,
        model_predictions=PREDICTIONS,
        model_versions=[1],
        **extra,
    )


def vote(example, *verdicts: str) -> None:
    for verdict in verdicts:
        ValidationFactory(example=example, verdict=verdict)


@pytest.fixture
def mixed_round(open_round):
    """A round with every kind of example: verified fooling, unverified, not fooled, rejected, flagged."""
    writer = UserFactory(username="writer", email="writer@example.org")
    made = {
        "verified": [
            make_example(open_round, consensus="verified", author=writer, validated_label="positive") for _ in range(30)
        ],
        "unverified": [make_example(open_round, author=writer) for _ in range(10)],
        "not_fooled": [make_example(open_round, fooled=False) for _ in range(5)],
        "rejected": [make_example(open_round, consensus="rejected") for _ in range(2)],
        "flagged": [make_example(open_round, consensus="flagged"), make_example(open_round, flagged=True)],
        "retracted": [make_example(open_round, retracted=True)],
    }
    for example in made["verified"][:5]:
        vote(example, "correct", "correct", "incorrect")
    vote(made["rejected"][0], "incorrect", "incorrect")
    return made


@pytest.fixture
def owner_user(open_round):
    user = UserFactory(username="task-owner")
    open_round.task.owners.add(user)
    return user
