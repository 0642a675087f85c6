"""The consent and survey tests' fixtures (tests/study/consent_fixtures.py): `task_world` and `study`."""

from tests.study.consent_fixtures import _fresh_cache, study, task_world  # noqa: F401
