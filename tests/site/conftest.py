from __future__ import annotations

import pytest


@pytest.fixture
def world(db, settings, tmp_path):
    """The permission matrix's world (tests/site/test_permission_matrix.py): a task with every kind of object."""
    from tests.site.test_permission_matrix import build_world

    settings.JOB_RUNNER = ""  # jobs start on commit, which a test's transaction never does
    settings.EXPORTS_DIR = tmp_path / "exports"
    settings.MODEL_STORE = tmp_path / "models"
    # Every persona comes from one address: the rate limits are not what these tests are about (test_throttles is).
    settings.SIGNUP_RATE = settings.LOGIN_RATE = settings.TOKEN_RATE = settings.VOTE_RATE = "10000/min"
    return build_world()
