"""Fixtures of the consent and survey tests (tests/study/test_consent.py, test_surveys.py, test_gate.py; offered
to them by tests/study/conftest.py): a sentiment task with an open round and a context ("studied"), its owner, a
writer and an admin (`task_world`); the same with its study on and consent version 1 (`study`); helpers."""

from __future__ import annotations

import itertools

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from study import consent, surveys
from study.models import Study
from tasks import roles
from tests.annotation.conftest import make_task, sentiment_body
from tests.factories import UserFactory

CONSENT = "# Taking part\n\nWe study how people write examples. **Your answers are kept under a pseudonym.**"
PRE_QUESTIONS = [
    {"key": "age", "kind": "number", "text": "How old are you?", "settings": {"min": 0, "max": 130, "integer": True},
     "eligibility": {"min": 18}},
    {"key": "native", "kind": "single", "text": "Is English your first language?", "choices": ["yes", "no"],
     "eligibility": {"allowed": ["yes"]}},
    {"key": "langs", "kind": "multiple", "text": "Which languages do you speak?", "choices": ["en", "es", "ar"],
     "required": False},
    {"key": "confidence", "kind": "likert", "text": "How confident are you with English?",
     "choices": ["not at all", "a little", "somewhat", "very"]},
    {"key": "notes", "kind": "text", "text": "Anything else?", "required": False, "settings": {"max_length": 50}},
]
GOOD_ANSWERS = {"age": 30, "native": "yes", "langs": ["en", "es"], "confidence": "very"}


@pytest.fixture
def _fresh_cache(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def task_world(db, _fresh_cache):
    task, round_, context = make_task("sentiment", slug="studied")
    owner = UserFactory(username="study-owner")
    task.owners.add(owner)
    writer = UserFactory(username="writer")
    roles.grant(writer, roles.ANNOTATOR)
    admin = UserFactory(username="study-admin", is_staff=True, is_superuser=True)
    return {"task": task, "round": round_, "context": context, "owner": owner, "writer": writer, "admin": admin}


@pytest.fixture
def study(task_world):
    """The study on, with a consent text (version 1), and no survey yet."""
    task = task_world["task"]
    Study.objects.create(task=task, enabled=True)
    consent.publish(task, CONSENT, by=task_world["owner"])
    return task_world


def add_pre_survey(task, items=None, active=True):
    found = surveys.configure(task, "pre", title="About you", intro="A few questions first.", active=active)
    surveys.replace_questions(found, PRE_QUESTIONS if items is None else items)
    return found


def add_post_survey(task):
    found = surveys.configure(task, "post", title="Afterwards")
    surveys.replace_questions(found, [{"key": "hard", "kind": "likert", "text": "How hard was it?",
                                       "choices": ["easy", "fair", "hard"]}])
    return found


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def page_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


_texts = itertools.count(1)


def submit(client: APIClient, world) -> object:
    """A new example (a text of its own each time: a repeated text is a 409 duplicate)."""
    body = sentiment_body(world["context"], input={"text": f"What a wonderful, slow evening number {next(_texts)}."})
    return client.post(f"/api/tasks/{world['task'].slug}/examples/", body, format="json")
