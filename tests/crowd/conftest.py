"""Fixtures of the crowd: a task with an open round, quizzes, and helpers to sign up and qualify."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from crowd import quizzes
from tests.factories import ContextFactory, RoundFactory, TaskFactory

SIGNUP_PASSWORD = "a-long-passphrase-42"


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The sign-up limit counts in the cache; every test starts with none."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def crowd_task(db):
    task = TaskFactory(slug="crowd-task", kind="sentiment")
    rnd = RoundFactory(task=task, number=1)
    ContextFactory(task=task, round=rnd, payload={"prompt": "The food was good but the service was slow."})
    return task


def set_crowd(task, **settings) -> None:
    task.config = {**task.config, "crowd": {**task.config.get("crowd", {}), **settings}}
    task.save()


def validator_quiz(task, pass_mark: float = 0.75):
    """Four "is this label right?" questions: the right answers are correct, incorrect, correct, incorrect."""
    quiz = quizzes.ensure_quiz(task, "validator")
    quizzes.configure(quiz, pass_mark=pass_mark, max_attempts=3, active=True)
    for text, proposed, answer in [
        ("A wonderful evening.", "positive", "correct"),
        ("Oh great, the lift is broken again.", "positive", "incorrect"),
        ("The shop opens at nine.", "neutral", "correct"),
        ("I loved every minute.", "negative", "incorrect"),
    ]:
        quizzes.add_item(quiz, context={}, input={"text": text}, proposed=proposed, answer=answer)
    return quiz


def writer_quiz(task):
    quiz = quizzes.ensure_quiz(task, "annotator")
    quizzes.configure(quiz, pass_mark=0.6, max_attempts=3, active=True)
    for text, label in [("What a dreadful film.", "negative"), ("The bus leaves at six.", "neutral"),
                        ("Best pizza in town!", "positive")]:
        quizzes.add_item(quiz, context={}, input={"text": text}, answer=label)
    return quiz


def answers_for(quiz, right: bool = True) -> dict[str, str]:
    """Form answers: all right, or all wrong."""
    out = {}
    for item in quiz.items.all():
        if item.proposed is not None:
            good = item.answer
            bad = "incorrect" if good == "correct" else "correct"
        else:
            good = item.answer
            bad = "positive" if good != "positive" else "negative"
        out[f"q{item.pk}"] = good if right else bad
    return out


def sign_up(username: str, ip: str = "198.51.100.1") -> Client:
    client = Client(REMOTE_ADDR=ip)
    response = client.post("/accounts/signup/", {"username": username, "email": f"{username}@example.org",
                                                 "password1": SIGNUP_PASSWORD, "password2": SIGNUP_PASSWORD})
    assert response.status_code == 302, response.content[:500]
    return client
