"""The first verdict as fast as the next (issue 39, item 3): a process that scores loads and warms the open rounds'
ensembles in the background when it starts and when another process deploys one, so a writer's first verdict does
not pay for loading the models. (Speed itself is measured by bench/bench_first_verdict.py, never asserted here.)"""

from __future__ import annotations

import threading

import pytest
from rest_framework.test import APIClient

from modelzoo import warmup
from modelzoo.serving import reset_backends
from modelzoo.testing import deploy_tiny_ensemble
from tasks import roles
from tests.annotation.conftest import make_task, sentiment_body
from tests.factories import UserFactory
from zoo.runtime import Predictor

pytestmark = pytest.mark.django_db(transaction=True)  # the warmer reads the database from its own thread


@pytest.fixture
def loads(monkeypatch):
    """Every model a backend of this process loads from disk, with the thread that loaded it."""
    seen: list[str] = []
    real = Predictor.load
    monkeypatch.setattr(Predictor, "load", classmethod(
        lambda cls, path: seen.append(threading.current_thread().name) or real(path)))
    return seen


def test_an_ensemble_deployed_by_another_process_is_loaded_in_the_background_before_the_first_verdict(loads):
    task, round_, context = make_task("sentiment", slug="sentiment", config={"labels": ["negative", "positive"]})
    deploy_tiny_ensemble(round_, members=2)  # as `manage.py demo_models` does, in its own process
    reset_backends()  # this process (the server) has loaded nothing
    loads.clear()
    warmed = threading.Event()
    warmer = warmup.Warmer(poll_s=0.1, on_warm=lambda ensemble, spent: warmed.set()).start()
    try:
        assert warmed.wait(120), warmer.failed
    finally:
        warmer.stop()
    assert loads == ["model-warmer", "model-warmer"]  # both members, in the warmer's thread, not a request's

    writer = UserFactory(username="writer")
    roles.grant(writer, roles.ANNOTATOR)
    api = APIClient()
    api.force_authenticate(writer)
    answer = api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert answer.status_code == 201 and answer.data["scoring_state"] == "scored"
    assert loads == ["model-warmer", "model-warmer"]  # the first verdict loaded nothing itself


def test_the_warmer_warms_a_redeployed_round_once_and_a_new_ensemble_again(loads):
    _, round_, _ = make_task("sentiment", slug="sentiment", config={"labels": ["negative", "positive"]})
    first = deploy_tiny_ensemble(round_, members=1)
    warmer = warmup.Warmer()
    assert warmer.poll_once() == [first.pk]
    assert warmer.poll_once() == []  # nothing new deployed: no work
    second = deploy_tiny_ensemble(round_, members=2)
    assert warmer.poll_once() == [second.pk]


def test_at_start_a_process_pays_its_first_use_costs_for_each_head_of_the_open_tasks(loads):
    make_task("sentiment", slug="sentiment", config={"labels": ["negative", "positive"]})
    make_task("qa", slug="qa")
    make_task("nli", slug="nli")
    warmer = warmup.Warmer()
    spent = warmer.warm_process()
    assert set(spent) == {"classification", "qa"}  # one tiny model per head, before any ensemble exists
    assert loads == ["MainThread", "MainThread"] and warmer.heads == {"classification", "qa"}
    assert warmer.warm_process() == {}  # paid once per process


@pytest.mark.parametrize(("argv", "environ", "inline", "role"), [
    (["manage.py", "runserver", "127.0.0.1:8000"], {"RUN_MAIN": "true"}, True, "runserver"),
    (["manage.py", "runserver", "127.0.0.1:8000"], {}, True, None),  # the autoreloader's parent serves nothing
    (["manage.py", "runserver", "--noreload"], {}, True, "runserver"),
    (["/srv/.venv/bin/gunicorn", "dynabench_site.wsgi"], {}, True, "wsgi"),
    (["/srv/.venv/bin/gunicorn", "dynabench_site.wsgi"], {}, False, None),  # its verdicts are the workers'
    (["/srv/.venv/bin/celery", "-A", "dynabench_site", "worker", "-Q", "dynabench-maps"], {}, False, "celery"),
    (["/srv/.venv/bin/celery", "-A", "dynabench_site", "beat"], {}, False, None),
    (["manage.py", "demo_models"], {}, True, None),
    (["/usr/bin/pytest", "tests/modelzoo"], {}, True, None),
])
def test_only_processes_that_score_start_a_warmer(argv, environ, inline, role):
    assert warmup.serving_role(argv, environ, inline) == role
