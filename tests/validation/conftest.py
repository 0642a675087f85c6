from __future__ import annotations

import pytest
from django.db import connection

from tasks import roles
from tests.factories import ExampleFactory, UserFactory


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL=postgres://...)")
    if connection.vendor != "postgresql":
        for item in items:
            if "postgres" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Factories hash a password per user; the default hasher makes persona-heavy tests crawl."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def set_validation(task, **rule) -> None:
    task.config = {**task.config, "validation": {**task.config.get("validation", {}), **rule}}
    task.save()


@pytest.fixture
def make_validator(db):
    def make(name: str):
        user = UserFactory(username=name)
        roles.grant(user, roles.VALIDATOR)
        return user

    return make


@pytest.fixture
def example(open_round):
    return ExampleFactory(round=open_round)
