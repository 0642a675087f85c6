"""The training seam: a labelled set and a spec in, artifacts out (zoo.trainers), and a round's retraining sent to
a real Celery worker on a training queue of its own, on the machine's Redis (modelzoo.trainers). The worker needs
no database: the rows are made and made ready here, the artifacts come through the shared model store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from modelzoo.models import ModelVersion
from rounds.models import PipelineRun, PipelineStep
from tests import celeryconf
from tests.annotation.test_celery_worker import stop  # the same real-worker teardown
from tests.factories import TaskFactory, UserFactory
from tests.rounds.conftest import FAST_PIPELINE, fill_task
from zoo.data import LabelledSet
from zoo.trainers import TRAINERS, InProcessTrainer, TrainJob

BROKER = "redis://127.0.0.1:6379/9"  # a database of its own; every queue here has a name of its own


def tiny_job(**overrides) -> TrainJob:
    train = LabelledSet("t")
    for n in range(12):
        label = "positive" if n % 2 else "negative"
        train.add({"text": f"the film {n} was {'great' if n % 2 else 'awful'}"}, label, f"k{n}")
    fields = dict(recipe="cached-top", spec={"head": "classification", "labels": ["negative", "positive"],
                                             "encoder": "tiny", "min_steps": 4, "max_steps": 6},
                  seeds=[0, 1], names=["a", "b"], outputs=["t/a", "t/b"], train=train)
    return TrainJob(**{**fields, **overrides})


def test_a_job_travels_as_json_and_keeps_its_name():
    job = tiny_job()
    again = TrainJob.from_json(json.loads(json.dumps(job.to_json())))
    assert again == job and again.id == job.id and job.id.startswith("train-")
    assert tiny_job(seeds=[0, 2]).id != job.id  # another job, another name
    with pytest.raises(ValueError, match="relative to the model store"):
        tiny_job(outputs=["/abs/a", "t/b"])
    with pytest.raises(ValueError, match="one name and one output folder per seed"):
        tiny_job(names=["a"])
    assert TRAINERS.names() == ("inprocess", "celery")  # the site registered its trainer


def test_the_inprocess_trainer_writes_each_member_once(tmp_path):
    job = tiny_job()
    artifacts = InProcessTrainer().train(job, tmp_path)
    assert [(a.name, a.seed, a.path, a.reused) for a in artifacts] == [("a", 0, "t/a", False), ("b", 1, "t/b", False)]
    for artifact in artifacts:
        folder = tmp_path / artifact.path
        assert (folder / "zoo.json").is_file() and artifact.metrics["steps"] >= 1
        assert json.loads((folder / "training.json").read_text())["job"] == job.id
    before = (tmp_path / "t/a/model.safetensors").stat().st_mtime_ns
    again = InProcessTrainer().train(job, tmp_path)  # the same job delivered twice: nothing trains again
    assert [a.reused for a in again] == [True, True] and again[0].metrics["steps"] == artifacts[0].metrics["steps"]
    assert (tmp_path / "t/a/model.safetensors").stat().st_mtime_ns == before


# -- a real worker ------------------------------------------------------------------------------------------------


def start_worker(queue: str, default_queue: str, store: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "CELERY_BROKER_URL": BROKER, "CELERY_RESULT_BACKEND": BROKER, "CELERY_QUEUE": default_queue,
           "TRAINING_QUEUE": queue, "MODEL_STORE": str(store), "DATABASE_URL": f"sqlite:///{log.parent / 'w.sqlite3'}",
           "ZOO_DEVICE": "cpu", "WORKER_HEARTBEAT_SECONDS": "2", "C_FORCE_ROOT": "1"}
    command = [str(Path(sys.executable).with_name("celery")), "-A", "dynabench_site", "worker", "--pool=solo",
               "-Q", queue, "-c", "1", "-n", f"{queue}@%h", "--loglevel=info", "--without-gossip", "--without-mingle"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   cwd=django_settings.BASE_DIR, start_new_session=True)
    deadline = time.monotonic() + 90
    while b"ready." not in log.read_bytes() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert process.poll() is None and b"ready." in log.read_bytes(), log.read_text()
    return process


def forget_backend(app):
    """Drop the app's cached result backend (built from the configuration on next use); returns it."""
    cached = app._backend
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)
    return cached


@pytest.fixture
def training_queue(settings, tmp_path):
    """This process sends training jobs to a queue of its own on Redis (no worker yet); the rest runs inline."""
    import redis

    from dynabench_site.celery import app
    from modelzoo.serving import reset_backends

    client = redis.Redis.from_url(BROKER)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip("no Redis at 127.0.0.1:6379")
    queue, default = f"training-test-{uuid.uuid4().hex[:8]}", f"dynabench-test-{uuid.uuid4().hex[:8]}"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MODEL_STORE, settings.MODEL_BACKEND = tmp_path / "models", "inprocess"
    settings.ROUNDS_PIPELINE, settings.JOB_RUNNER = FAST_PIPELINE, "inline"  # the pipeline runs here, at once
    settings.MODELZOO_RECIPE = {"min_steps": 8, "max_steps": 12}  # a few updates: the seam is under test
    settings.TRAINING_BACKEND, settings.TRAINING_QUEUE, settings.TRAINING_WAIT_S = "celery", queue, 0
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = BROKER, False
    saved = celeryconf.update(broker_url=BROKER, result_backend=BROKER, task_always_eager=False,
                              task_default_queue=default, task_routes={"modelzoo.train": {"queue": queue}})
    saved_backend = forget_backend(app)  # the app caches its result backend: an earlier test's (the settings'
    # in-memory one) would never see the worker's results
    app._pool = None
    app.amqp._producer_pool = None
    reset_backends()
    try:
        yield queue, default, client
    finally:
        celeryconf.restore(saved)
        forget_backend(app)
        if saved_backend is not None:
            app._backend = saved_backend
        app._pool = None
        app.amqp._producer_pool = None
        reset_backends()
        for name in (queue, default):
            client.delete(name, f"_kombu.binding.{name}")


@pytest.fixture
def small_task(db):
    task = TaskFactory(slug="small", kind="sentiment")
    fill_task(task)
    owner = UserFactory(username="boss")
    task.owners.add(owner)
    return task, owner


def retrained(run: PipelineRun) -> list[ModelVersion]:
    return list(ModelVersion.objects.filter(pk__in=run.steps.get(name="retrain").result["versions"]).order_by("pk"))


@pytest.mark.integration
def test_a_round_waits_for_a_training_worker_and_resumes_onto_the_same_job(training_queue, small_task, tmp_path,
                                                                           settings, monkeypatch):
    """TRAINING_BACKEND=celery and no worker on the training queue: past TRAINING_WAIT_S the step fails saying the
    job stays queued, and the job and the member rows (training) are kept. The retry waits for that same job (not a
    second one): the step stays running and says that no worker serves the queue; a worker that starts then trains
    the members and the round goes on to the end."""
    from rounds import services, training

    queue, default, client = training_queue
    task, owner = small_task
    settings.TRAINING_WAIT_S = 2
    run = services.start_pipeline(task, owner)
    run.refresh_from_db()
    step = run.steps.get(name="retrain")
    assert run.status == PipelineRun.Status.FAILED and "stays queued" in step.error, step.error
    sent = step.result["training_job"]
    rows = ModelVersion.objects.filter(pk__in=sent["versions"])
    assert client.llen(queue) == 1 and set(rows.values_list("status", flat=True)) == {"training"}
    assert "none serves the queue" in rows.first().progress_message

    settings.TRAINING_WAIT_S = 120  # long enough for the worker below to start (a bound, so a failure cannot hang)
    seen, workers = {}, []
    real_notice = training._notice

    def notice(ctx):
        say = real_notice(ctx)

        def watched(message: str) -> None:
            say(message)
            if "none serves the queue" in message and not workers:  # nothing is lost while nobody trains
                now = PipelineStep.objects.get(run=ctx.run, name="retrain")
                seen.update(status=now.status, message=now.message, queued=client.llen(queue))
                workers.append(start_worker(queue, default, tmp_path / "models", tmp_path / "worker.log"))

        return watched

    monkeypatch.setattr(training, "_notice", notice)
    try:
        services.retry_pipeline(run, owner)
    finally:
        for process in workers:
            stop(process)
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert seen["status"] == PipelineStep.Status.RUNNING and "waiting for a training worker" in seen["message"]
    assert f"-Q {queue}" in seen["message"] and seen["queued"] == 1
    run.refresh_from_db()
    step = run.steps.get(name="retrain")
    assert run.status == PipelineRun.Status.DONE, (run.error, log[-3000:])
    assert step.result["training_job"] == sent and [v.pk for v in retrained(run)] == sent["versions"]
    assert "still queued" in step.log and step.log.count("queued the training job on") == 1  # sent once
    for version in retrained(run):
        assert version.status in ("ready", "deployed") and version.metrics["steps"] >= 1
        assert json.loads((version.artifact_path / "training.json").read_text())["job"] == sent["jobs"][0]
    assert log.count("modelzoo.train[") >= 1 and "succeeded" in log and client.llen(queue) == 0


def test_the_gpu_profile_reserves_a_gpu_for_torchserve_and_the_training_worker():
    """docker-compose.yml's profile "gpu" (no engine needed to read it); the default image keeps the CPU torch."""
    import yaml

    root = Path(django_settings.BASE_DIR)
    services = yaml.safe_load((root / "docker-compose.yml").read_text())["services"]
    for name in ("torchserve-gpu", "trainer"):
        service = services[name]
        assert service["profiles"] == ["gpu"] and service["environment"]["ZOO_DEVICE"] == "cuda"
        assert service["deploy"]["resources"]["reservations"]["devices"] == [
            {"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]
        assert "/whl/cu" in service["build"]["args"]["TORCH_INDEX"] and service["image"] == "dynabench:gpu"
    assert services["trainer"]["command"][services["trainer"]["command"].index("-Q") + 1] == "training"
    assert "number_of_gpu=1" in " ".join(services["torchserve-gpu"]["command"])
    assert not any("profiles" in services[n] for n in ("web", "worker", "explainer", "torchserve", "beat"))
    assert "-Q" not in services["worker"]["command"]  # the scoring workers never consume "training"
    assert "ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu" in (root / "Dockerfile").read_text()
