"""Faults against the local production path (tests/prod/conftest.py: gunicorn, Celery worker + beat, TorchServe,
our own Redis, PostgreSQL): a submission is always saved and answered, and scoring recovers by itself.

Run, in a pytest session of its own (it runs its own TorchServe): `PROD_FAULTS=1
PROD_DATABASE_URL=postgres://postgres@127.0.0.1:5432/prodfaults .venv/bin/python -m pytest tests/prod -m integration -q`
(.ci/run does). Without PROD_FAULTS=1 (e.g. inside `make test`) they are skipped with that reason.
"""

from __future__ import annotations

import signal
import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def assert_saved_and_answered(stack, label: str, n: int, expect_delayed: bool = False) -> list[int]:
    ids = []
    for _ in range(n):
        status, data = stack.submit(label)
        assert status in (201, 202), f"a submission answered {status}: {data}"
        assert isinstance(data, dict) and data.get("id"), data
        if expect_delayed:
            assert status == 202 and data["scoring_state"] == "pending" and data["scoring_delayed"] is True, data
            assert data["scoring_error"].startswith("scoring delayed"), data["scoring_error"]
        ids.append(data["id"])
    for pk in ids:  # stored: each one reads back
        assert stack.example(pk)["id"] == pk
    return ids


def assert_exactly_one_verdict(stack, examples: dict[int, dict]) -> None:
    for pk, example in examples.items():
        assert example["scoring_state"] == "scored", (pk, example["scoring_state"], example["scoring_error"])
        assert isinstance(example["fooled"], bool) and len(example["model_predictions"]) == 2
        assert stack.verdicts_stored(pk) == 1, f"example {pk}: {stack.verdicts_stored(pk)} verdicts stored"


def test_the_stack_serves_static_files_health_and_a_verdict(stack):
    status, _ = stack.call("GET", "/static/js/create.js", token="")
    assert status == 200  # WhiteNoise under gunicorn with DEBUG=false
    status, health = stack.call("GET", "/healthz", token=stack.health_token)
    assert status == 200 and health["status"] == "ok", health
    assert health["checks"]["workers"]["count"] >= 1
    [ensemble] = [e for e in health["checks"]["models"]["ensembles"] if e["task"] == "sentiment"]
    assert ensemble["served"] is True, health["checks"]["models"]
    ids = assert_saved_and_answered(stack, "baseline", 2)
    _, examples = stack.wait_scored(ids, 30)
    assert_exactly_one_verdict(stack, examples)


def test_torchserve_killed_while_examples_are_submitted(stack):
    stack.kill9("torchserve")
    ids = assert_saved_and_answered(stack, "torchserve-down", 6)
    time.sleep(2)  # a few retries meet the closed port
    assert all(stack.example(pk)["scoring_state"] == "pending" for pk in ids)
    status, health = stack.call("GET", "/healthz", token=stack.health_token)
    assert status == 503 and health["checks"]["models"]["status"] == "down", health
    stack.script("start", "torchserve", timeout=1500)  # may wait for the machine's TorchServe lock
    stack.script("start", "register")  # eager registration, as after any TorchServe start
    back = time.monotonic()
    waited, examples = stack.wait_scored(ids, 45)
    took = time.monotonic() - back
    stack.timings["torchserve_back_to_verdicts_s"] = took
    assert took <= 30, f"verdicts took {took:.1f} s after TorchServe was back"
    assert_exactly_one_verdict(stack, examples)


def test_the_worker_killed_in_the_middle_of_scoring(stack):
    # TorchServe frozen: the worker claims the example and waits inside the prediction; then kill -9 the worker.
    stack.signal("torchserve", signal.SIGSTOP)
    try:
        status, data = stack.submit("worker-killed")
        assert status == 202, data
        pk = data["id"]
        deadline = time.monotonic() + 20
        while stack.example(pk)["scoring_attempts"] < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert stack.example(pk)["scoring_attempts"] == 1, "the worker never started scoring"
        stack.kill9("worker")
    finally:
        stack.signal("torchserve", signal.SIGCONT)
    (stack.dir / "logs" / "worker.log").rename(stack.dir / "logs" / "worker-killed.log")
    stack.script("start", "worker")
    waited, examples = stack.wait_scored([pk], 60)
    stack.timings["worker_kill_to_verdict_s"] = waited
    assert_exactly_one_verdict(stack, examples)
    assert examples[pk]["scoring_attempts"] >= 2  # redelivered (or swept): a second attempt stored the verdict


def test_the_broker_down_submissions_saved_and_scoring_resumes_by_itself(stack):
    stack.script("stop", "redis")  # our own Redis: the broker, and CACHE_URL (rate limits) on it too
    try:
        ids = assert_saved_and_answered(stack, "broker-down", 5, expect_delayed=True)
        for path in ("/", "/tasks/sentiment/", "/api/tasks/"):
            status, _ = stack.call("GET", path, token="")
            assert status < 500, f"{path} answered {status} with the broker down"
        status, health = stack.call("GET", "/healthz", token=stack.health_token)
        assert health["checks"]["broker"]["status"] == "down", health
    finally:
        stack.script("start", "redis")
    back = time.monotonic()
    waited, examples = stack.wait_scored(ids, 75)
    took = time.monotonic() - back
    stack.timings["broker_back_to_verdicts_s"] = took
    assert took <= 60, f"scoring resumed {took:.1f} s after the broker was back"
    assert_exactly_one_verdict(stack, examples)
    print(f"\nfault timings: {stack.timings}")
