"""The site's trainers: where a round's retraining runs (`settings.TRAINING_BACKEND`, one of `zoo.trainers`'
TRAINER_NAMES), and the Celery job a training worker runs.

- "inprocess" (the default): the pipeline's own process trains, as it always has
  (`modelzoo.ensemble_training.train_ensemble`, the demo models' recipe).
- "celery": the job goes to the Celery queue of its own, TRAINING_QUEUE ("training"), served by GPU workers
  (`celery -A dynabench_site worker -Q training -c 1 -n training@%h` with ZOO_DEVICE=cuda on the GPU host); the
  web tier and the scoring workers never consume that queue. The labelled sets and the spec travel as JSON
  (`zoo.trainers.TrainJob`: rows, never pickles); the worker writes the artifacts into the shared model store
  (MODEL_STORE, mounted on both hosts) and answers with their folders and metrics. Creating the ModelVersion
  rows before, and making them ready after, stays here, on the site: a training worker needs no database.

A worker that is down delays the round, it never loses it: the job waits on its queue (Redis keeps it), the
member rows stay *training* with a message saying what they wait for, the step stays running and says the same
(or, past TRAINING_WAIT_S, fails saying so), and a step that runs again (retry, takeover) sends the same job
under the same id and waits for it again: it is trained once (`zoo.trainers.InProcessTrainer` returns a member
this job already wrote as it is).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings

from modelzoo import data, ensemble_training, services
from modelzoo.ensemble_training import EnsembleProgress, MemberSettings, member_fingerprint
from modelzoo.models import ModelVersion
from zoo import trainers as library
from zoo.recipes import CACHED_TOP, FULL, RECIPES, RecipeSpec
from zoo.trainers import (
    CELERY,
    INPROCESS,
    TRAINER_NAMES,
    TRAINERS,
    Artifact,
    InProcessTrainer,
    Notice,
    Progress,
    Trainer,
    TrainerError,
    TrainJob,
)

Status = ModelVersion.Status
JOB_NAME = "modelzoo.train"
POLL_S = 1.0
NOTICE_EVERY_S = 30.0  # a waiting step repeats its message this often (the elapsed time in it moves)
STALL_S = 120.0  # a job that took no step for this long while its worker is gone: said so


def setting(name: str, _default: Any = None) -> Any:
    """A trainer's setting, from the Django settings, where each is defined once (the library asks by name, with
    the default it would use outside the site)."""
    return getattr(settings, name)


class CeleryTrainer(Trainer):
    """Sends the job to TRAINING_QUEUE and waits for a training worker's artifacts, relaying its progress (the
    worker reports it through the result backend) and saying, while nobody has taken the job, whether any worker
    serves the queue. Without a broker (the embedded default: jobs run inline) it trains here."""

    name = CELERY

    def __init__(self, queue: str = "training", wait_s: float = 0.0, poll_s: float = POLL_S):
        self.queue, self.wait_s, self.poll_s = queue, float(wait_s), poll_s

    @classmethod
    def from_config(cls, config=setting) -> CeleryTrainer:
        return cls(queue=config("TRAINING_QUEUE", "training"), wait_s=float(config("TRAINING_WAIT_S", 0) or 0))

    def train(self, job: TrainJob, root: Path, progress: Progress | None = None,
              notice: Notice | None = None) -> list[Artifact]:
        from dynabench_site.celery import app

        if app.conf.task_always_eager:  # no broker: the embedded default runs jobs inline
            return InProcessTrainer().train(job, root, progress, notice)
        # A backend made from the configuration now, not the app's cached one: a process whose configuration
        # changed after its first job (tests; a worker re-pointed) would otherwise read results elsewhere forever.
        result = app.AsyncResult(job.id, backend=app._get_backend())
        if result.state == "PENDING" and self._queued(job.id):
            say(notice, f"the training job {job.id} is still queued on {self.queue!r}: waiting for it again")
        elif result.state in ("PENDING", "FAILURE", "REVOKED"):  # never sent, lost, or an earlier attempt failed:
            result.forget()  # sent (again) under the same id; a member this job already wrote is not trained again
            try:
                train_job.apply_async(args=[job.to_json()], task_id=job.id)
            except Exception as exc:
                raise TrainerError(f"could not queue the training job on {self.queue!r}: {type(exc).__name__}: {exc}",
                                   retryable=True) from exc
            say(notice, f"queued the training job on {self.queue!r} ({job.id})")
        else:
            say(notice, f"waiting again for the training job {job.id} ({result.state.lower()})")
        return self._wait(result, Path(root), progress, notice)

    def _queued(self, job_id: str) -> bool:
        """Whether a message of this job still waits on the queue (the broker's Redis list; best effort: False
        when it cannot be read, and the job is sent again, which trains nothing twice)."""
        from dynabench_site.celery import heartbeat_client

        client = heartbeat_client()
        if client is None:
            return False
        try:
            return any(job_id.encode() in raw for raw in client.lrange(self.queue, 0, -1))
        except Exception:
            return False

    def _wait(self, result, root: Path, progress: Progress | None, notice: Notice | None) -> list[Artifact]:
        started = time.monotonic()
        said, said_at, last_step = "", 0.0, (None, time.monotonic())
        while True:
            state = result.state
            if state == "SUCCESS":
                return self._visible([Artifact.from_json(a) for a in result.result], root)
            if state in ("FAILURE", "REVOKED"):
                error = result.result
                raise TrainerError(f"the training worker failed: {type(error).__name__}: {error}"
                                   if isinstance(error, BaseException) else f"the training job was {state.lower()}")
            info = result.info if isinstance(result.info, dict) else {}
            if state == "PROGRESS" and "done" in info:
                step = (info["done"], info.get("total"))
                if step != last_step[0]:
                    last_step = (step, time.monotonic())
                    if progress:
                        progress(int(info["done"]), int(info["total"]), dict(info.get("stats") or {}))
            message = self._state_message(state, info, time.monotonic() - started, time.monotonic() - last_step[1])
            now = time.monotonic()
            if message.split(" (")[0] != said.split(" (")[0] or now - said_at >= NOTICE_EVERY_S:
                say(notice, message)
                said, said_at = message, now
            if self.wait_s and state == "PENDING" and now - started > self.wait_s:  # nobody took it
                raise TrainerError(f"{message}; gave up waiting after {self.wait_s:.0f} s (TRAINING_WAIT_S). The job "
                                   f"stays queued: retry the run to wait for it again", retryable=True)
            time.sleep(self.poll_s)

    @staticmethod
    def _visible(artifacts: list[Artifact], store: Path) -> list[Artifact]:
        """The worker's artifacts, once they are seen here: the model store must be the same on both hosts."""
        missing = [a.path for a in artifacts if not (store / a.path / "zoo.json").is_file()]
        if missing:
            raise TrainerError(f"the training worker wrote {', '.join(missing)}, but MODEL_STORE here ({store}) has "
                               f"no such artifact: the web, pipeline and training hosts must share the model store")
        return artifacts

    def _state_message(self, state: str, info: dict, waited: float, quiet: float) -> str:
        from dynabench_site.celery import workers_on

        workers = workers_on(self.queue)
        if state == "PENDING":
            if workers == []:
                return (f"waiting for a training worker (none serves the queue {self.queue!r}: start one on the GPU "
                        f"host, `celery -A dynabench_site worker -Q {self.queue} -c 1`; the job stays queued and "
                        f"the round resumes when one takes it) ({waited:.0f} s)")
            who = f"{len(workers)} serve the queue, busy with other jobs" if workers else "busy with other jobs?"
            return f"queued on {self.queue!r}, waiting for a training worker ({who}) ({waited:.0f} s)"
        if workers == [] and quiet > STALL_S:
            return (f"the training worker stopped reporting {quiet:.0f} s ago and none serves {self.queue!r} now: "
                    f"the job goes back to the queue and resumes when a worker takes it")
        where = f" on {info['worker']}" if info.get("worker") else ""
        return f"training{where} ({waited:.0f} s)"


def say(notice: Notice | None, message: str) -> None:
    if notice:
        notice(message)


TRAINERS.register(CeleryTrainer.name, CeleryTrainer)  # the GPU workers' queue
TRAINERS.require(TRAINER_NAMES, exactly=True)  # what TRAINING_BACKEND accepts, and nothing else


def get_trainer(name: str | None = None) -> Trainer:
    return library.make_trainer(name or settings.TRAINING_BACKEND, setting)


# -- the job a training worker runs --------------------------------------------------------------------------


@shared_task(name=JOB_NAME, bind=True, acks_late=True, track_started=True, ignore_result=False,
             reject_on_worker_lost=True, long_running=True)
def train_job(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Train a `zoo.trainers.TrainJob` here (ZOO_DEVICE chooses the device: a GPU on a training worker) into this
    host's MODEL_STORE; progress goes to the result backend, where the waiting step reads it."""
    import socket

    from zoo import device

    job = TrainJob.from_json(payload)
    device.check()  # ZOO_DEVICE=cuda without CUDA: a clear error, never a silent CPU run
    worker = getattr(self.request, "hostname", None) or socket.gethostname()
    last = [0.0]

    def report(done: int, total: int, stats: dict[str, float]) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0 or done >= total or stats.get("finished"):
            last[0] = now
            if self.request.id and not self.request.is_eager:
                self.update_state(state="PROGRESS", meta={"done": done, "total": total, "worker": worker,
                                                          "stats": {k: float(v) for k, v in stats.items()}})

    artifacts = InProcessTrainer().train(job, Path(settings.MODEL_STORE), progress=report)
    return [a.to_json() for a in artifacts]


# -- the round pipeline's entry ------------------------------------------------------------------------------


def train_ensemble(task, labelled: data.LabelledSet, seeds: Sequence[int], *, names: Sequence[str] | None = None,
                   recipe: str = CACHED_TOP, spec: RecipeSpec | None = None, full_overrides: dict | None = None,
                   dev: data.LabelledSet | None = None, reuse: bool = True, parent: ModelVersion | None = None,
                   echo: Progress | None = None, notice: Notice | None = None,
                   resume: dict[str, Any] | None = None, on_job: Callable[[dict[str, Any]], None] | None = None,
                   start_from: str | None = None, **extra: Any) -> list[ModelVersion]:
    """One ready model version per seed, trained where TRAINING_BACKEND says. "inprocess":
    `ensemble_training.train_ensemble`, as always (`start_from` and `extra` passed on). Otherwise the members'
    rows are made here, the job goes to the trainer, and the rows become ready with the artifacts' metrics; with
    `start_from` "live" each member is a job of its own whose encoder is its live member's folder (as in process).
    `on_job` gets {"jobs", "versions"} once a job is handed over; `resume` is what an earlier attempt of the same
    step was given: its rows, still training, are waited for again instead of superseded."""
    name = settings.TRAINING_BACKEND
    if name == INPROCESS:
        if start_from is not None:
            extra["start_from"] = start_from
        return ensemble_training.train_ensemble(task, labelled, seeds, names=names, recipe=recipe, spec=spec,
                                                full_overrides=full_overrides, dev=dev, reuse=reuse, parent=parent,
                                                echo=echo, **extra)
    RECIPES.lookup(recipe)
    if not labelled.inputs:
        raise ValueError(f"no training examples in {labelled.name}")
    seeds, names = list(seeds), list(names or [f"{task.slug}-s{seed}" for seed in seeds])
    overrides = dict(full_overrides or {})
    if recipe == FULL:  # the run's encoder, else the task's, else the site's (as in process)
        from modelzoo import encoders

        if hasattr(encoders, "encoder_for"):
            overrides["encoder"] = encoders.encoder_for(task, overrides.get("encoder"))
    spec = spec or (ensemble_training.default_recipe(task) if recipe == CACHED_TOP else None)
    starts = _live_starts(task, start_from, extra.get("live"), len(seeds))
    handed: dict[str, list] = {"jobs": [], "versions": []}

    def handed_over(job: dict[str, Any]) -> None:
        handed["jobs"].append(job["job"])
        handed["versions"] += job["versions"]
        if on_job:
            on_job(dict(handed))

    if starts is None:
        versions = _train_remote(name, task, labelled, seeds, names, recipe, spec, overrides, dev, reuse, parent,
                                 echo, notice, resume, handed_over)
    else:  # each member from its own live member's folder: a job per member, one after another
        versions = []
        for i, (seed, member_name) in enumerate(zip(seeds, names, strict=True)):
            folder = ensemble_training._start_folder(starts[i])
            member_spec = replace(spec, encoder=folder) if spec is not None else None

            def member_echo(done: int, total: int, stats: dict[str, float], i: int = i) -> None:
                if echo:
                    echo(i * total + done, total * len(seeds), stats)

            versions += _train_remote(name, task, labelled, [seed], [member_name], recipe, member_spec,
                                      {**overrides, "encoder": folder}, dev, reuse, starts[i], member_echo, notice,
                                      resume, handed_over)
    record = getattr(ensemble_training, "_record_start", None)
    if record is not None:  # the lineage says which encoder and start the members were trained from
        from modelzoo import encoders

        chosen = encoders.label_of(task, overrides.get("encoder") if recipe == FULL else
                                   (spec.encoder if spec is not None else None))
        record(versions, chosen, start_from_of(task, start_from) if starts else "pretrained", starts)
    return versions


def start_from_of(task, value: str | None) -> str:
    from modelzoo import encoders

    return encoders.start_from_for(task, value)


def _live_starts(task, start_from: str | None, live, n: int) -> list[ModelVersion] | None:
    """The live member each new member starts from (ensemble_training's rule), or None: from the encoder."""
    if start_from_of(task, start_from) != "live":
        return None
    return ensemble_training._live_starts(task, live, n)


def _train_remote(name, task, labelled, seeds, names, recipe, spec, overrides, dev, reuse, parent, echo, notice,
                  resume, on_job) -> list[ModelVersion]:
    versions, todo, job_spec = _prepare(task, labelled, seeds, names, recipe, spec, overrides, dev, reuse, parent,
                                        resume)
    if not todo:
        return versions
    training = [versions[i] for i in todo]
    job = TrainJob(recipe=recipe, spec=job_spec, seeds=[seeds[i] for i in todo], names=[names[i] for i in todo],
                   outputs=[v.artifact for v in training], train=labelled, dev=dev if recipe == CACHED_TOP else None,
                   meta=[{"task": task.slug, "fingerprint": v.fingerprint, "data": labelled.name,
                          "model_version": v.pk, "created": v.created_at.isoformat()} for v in training])
    on_job({"job": job.id, "versions": [v.pk for v in training]})

    def waiting(message: str) -> None:
        ModelVersion.objects.filter(pk__in=[v.pk for v in training], status=Status.TRAINING).update(
            progress_message=message[:200])
        say(notice, message)

    try:
        artifacts = get_trainer(name).train(job, Path(settings.MODEL_STORE), EnsembleProgress(training, echo), waiting)
    except TrainerError as exc:
        if exc.retryable:  # the rows stay training: a retry waits for the same job
            waiting(str(exc))
        else:
            _failed(training, exc)
        raise
    except Exception as exc:
        _failed(training, exc)
        raise
    for version, artifact in zip(training, artifacts, strict=True):
        services.transition(version, Status.READY, metrics=artifact.metrics, progress=1.0,
                            progress_message=ensemble_training._done_message(artifact.metrics)
                            if recipe == CACHED_TOP else "trained")
    return versions


def _failed(training: Sequence[ModelVersion], exc: Exception) -> None:
    for version in training:
        services.transition(version, Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], progress_message="failed")


def _prepare(task, labelled, seeds, names, recipe, spec, overrides, dev, reuse, parent, resume):
    """Each member's row: reused (ready, same data and settings), resumed (an earlier attempt's, still training),
    or new (training). Returns (rows, the indices to train, the job's spec)."""
    if recipe == FULL:
        specs = [services.default_spec(task, seed=seed, **overrides) for seed in seeds]
        fps = [services.fingerprint(task, s, labelled.keys) for s in specs]
        stored = specs
        job_spec = {k: v for k, v in asdict(specs[0]).items() if k != "seed"}
        lineage = {"data": labelled.name, "examples": len(labelled.keys)}
    else:
        spec = spec or ensemble_training.default_recipe(task)
        fps = [member_fingerprint(task, spec, seed, labelled.keys) for seed in seeds]
        stored = [MemberSettings(**asdict(spec), seed=seed) for seed in seeds]
        job_spec = asdict(spec)
        lineage = {"data": labelled.name, "examples": len(labelled.keys), "recipe": CACHED_TOP,
                   **({"dev": dev.name, "dev_examples": len(dev.keys)} if dev is not None else {})}
    job_spec["encoder"] = _portable_encoder(job_spec.get("encoder", ""))
    earlier = _resumable(task, resume)
    versions: list[ModelVersion] = []
    todo = []
    for i, fp in enumerate(fps):
        version = (services._reusable(task, fp) if reuse else None)
        if version is None and fp in earlier:
            version = earlier[fp]
            todo.append(i)
        elif version is None:
            ModelVersion.objects.filter(task=task, fingerprint=fp, status=Status.TRAINING).update(
                status=Status.FAILED, error="interrupted; superseded by a new training run",
                progress_message="interrupted")
            version = services._create_version(task, stored[i], fp, names[i], parent, lineage)
            todo.append(i)
        versions.append(version)
    return versions, todo, job_spec


def _resumable(task, resume: dict[str, Any] | None) -> dict[str, ModelVersion]:
    """The rows an earlier attempt of this step sent to a trainer and that still wait for it, by fingerprint."""
    if not resume or not resume.get("versions"):
        return {}
    rows = ModelVersion.objects.filter(task=task, pk__in=resume["versions"], status=Status.TRAINING)
    return {v.fingerprint: v for v in rows}


def _portable_encoder(name: str) -> str:
    """An encoder folder inside the model store is named relative to it ("store:<path>"): the store is mounted at
    another place on a training worker's host. A name, or a folder elsewhere, is sent as it is."""
    try:
        path, store = Path(name), Path(settings.MODEL_STORE).resolve()
        if name and path.is_absolute() and path.resolve().is_relative_to(store):
            return library.STORE_PREFIX + str(path.resolve().relative_to(store))
    except (OSError, ValueError):
        pass
    return name
