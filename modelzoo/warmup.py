"""Models loaded and warmed before the first verdict needs them (issue 39, item 3: the first verdict after
`make run` took 26 s, later ones 1-4 s).

A verdict's first use of an ensemble in a process pays for loading every member from disk, the first forward
pass (finding the frozen trunk the members share, the first call into torch's kernels) and, where the task has
one, loading the language model opponent; the next verdict pays for none of it. Most of that is paid once per
process, whatever the ensemble: importing transformers' model code (8 of the 9.4 s of a process's first model
load; the next loads take 0.5 s) and loading the packaged language model. So every process that scores warms
itself, in the background, before a writer asks:

- when it starts: `warm_process` pays those per-process costs (a tiny model of each head the open tasks use,
  loaded and run as a served model is, where models run in this process; the packaged language model of a task
  whose opponent is on), and every ensemble already deployed is warmed;
- when an ensemble is deployed by another process (in the embedded default, `manage.py demo_models` trains and
  deploys in a separate process while `runserver` serves; a round's pipeline runs in a `run_job` subprocess or
  on a worker): the `Warmer` thread reads the open rounds' active ensembles every `POLL_S` seconds (one query) and
  warms one it has not warmed yet.

Which processes (`serving_role`): `manage.py runserver`'s serving process, a WSGI server whose jobs run inline,
and every Celery worker (each pool process): the scoring worker (through TorchServe, whose registration loads the
models; the warm-up's forward pass warms its handler) and the explainer (in process). A request never waits for
the thread: it only ever waits for a model that the thread is loading at that very moment, as it would have
loaded it itself.

Warming an ensemble = the backend's `prepare` (load / register), one forward pass of the ensemble on an input of
the task, one word map of it (the map's job runs next after every verdict), and one call of the task's language
model opponent when it has one. Nothing is stored. A failure is logged and tried again after `RETRY_S`, never
raised: warming is an optimisation, scoring loads what it needs anyway.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.db import close_old_connections, connection

from modelzoo.models import Ensemble

log = logging.getLogger(__name__)

POLL_S = 2.0  # how often the warmer looks for a newly deployed ensemble (one indexed query)
RETRY_S = 60.0  # an ensemble whose warm-up failed (e.g. the model server was not up yet) is tried again after this
WARM_TEXT = "The first verdict should come as fast as the next one."


def sample_input(task) -> dict[str, str]:
    """A model input of the task to warm its models with: an imported labelled row when the task has one,
    else its first context with every input field filled."""
    from tasks.models import Context, LabeledItem

    kind, config = task.kind_impl, task.typed_config
    item = LabeledItem.objects.filter(task=task).order_by("id").first()
    if item is not None:
        return kind.model_input(config, item.context or {}, item.input)
    context = Context.objects.filter(task=task).order_by("id").first()
    fields = {name: WARM_TEXT for name in config.input_fields}
    return kind.model_input(config, (context.payload if context is not None else {}) or {}, fields)


def warm_ensemble(ensemble: Ensemble, explain: bool = True) -> dict[str, float]:
    """Load and run one ensemble (see the module docstring); returns the seconds each part took."""
    from modelzoo import opponent, services  # torch: only in a process that scores
    from modelzoo.serving import ModelRef, get_backend
    from zoo.types import BackendError

    task = ensemble.round.task
    refs = [ModelRef.of(v) for v in ensemble.ordered_members()]
    if not refs:
        return {}
    backend, spent = get_backend(), {}
    model_input = sample_input(task)
    started = time.perf_counter()
    backend.prepare(refs)
    spent["load"] = time.perf_counter() - started
    started = time.perf_counter()
    backend.predict(refs, [model_input])
    spent["forward"] = time.perf_counter() - started
    if explain:
        started = time.perf_counter()
        try:
            backend.explain_ensemble(refs, model_input, services.explanation_method(task), None)
        except BackendError as exc:  # models that cannot explain lose only the map (as in scoring)
            log.info("warm-up of %s: no word map (%s)", ensemble.round, exc)
        spent["map"] = time.perf_counter() - started
    rival = opponent.current(task)
    if rival is not None:
        started = time.perf_counter()
        try:
            opponent.predict(rival, [model_input])  # loads its model (a local one) in this process
        except Exception as exc:  # noqa: BLE001 - a verdict leaves a failing opponent out, with the reason
            log.info("warm-up of %s: the language model opponent did not answer (%s)", ensemble.round, exc)
        spent["opponent"] = time.perf_counter() - started
    return spent


def warm_head(head: str, model_input: dict[str, str]) -> None:
    """Pay a process's first-use costs of a head before any real model needs them: a tiny random model of the head
    (the encoder's architecture, a few MB; zoo.training's TINY) saved, loaded as a served model is
    (`runtime.Predictor.load`) and run once. Importing transformers' model code alone took 8 of the 9.4 s of a
    process's first model load (the next loads: 0.5 s), and the first forward pass initialises torch's kernels."""
    import tempfile
    from pathlib import Path

    from zoo import encoder, training
    from zoo.heads import get_head
    from zoo.runtime import Predictor

    spec = training.TrainSpec(head=head, labels=["a", "b"] if get_head(head).labelled else [], encoder=training.TINY,
                              max_length=32)
    with tempfile.TemporaryDirectory(prefix="warm-") as folder:
        path = training.save_artifact(training.build_model(spec), encoder.load_tokenizer(), spec,
                                      {"note": "warm-up"}, Path(folder) / "tiny", {})
        Predictor.load(path).predict([model_input])


def warm_process(tasks, skip_heads: set[str] = frozenset()) -> dict[str, float]:
    """What any first verdict in this process would pay whatever its ensemble (see `warm_head`), for the heads of
    `tasks` (those with an open round), and the packaged language model of a task whose opponent is on (loading it
    took 7.7 s of the first verdict under load): seconds per part."""
    from modelzoo import opponent
    from modelzoo.llm import provider_for
    from modelzoo.serving import get_backend
    from zoo.llm.opponent import LLMClassifier
    from zoo.serving.inprocess import InProcessBackend

    spent: dict[str, float] = {}
    in_process = get_backend().name == InProcessBackend.name  # elsewhere the model server holds the models
    tasks = [task for task in tasks if not task.kind_impl.generative]  # no encoder head, no opponent
    for task in tasks if in_process else []:
        head = task.kind_impl.head
        if head in skip_heads or head in spent:
            continue
        started = time.perf_counter()
        warm_head(head, sample_input(task))
        spent[head] = time.perf_counter() - started
    for task in tasks:
        config = task.typed_config
        if not config.opponent.enabled or not task.kind_impl.target_is_label or "opponent" in spent:
            continue
        started = time.perf_counter()
        try:
            LLMClassifier(provider_for(config.opponent.provider), list(config.labels),
                          field_names=opponent.field_names(task)).predict([sample_input(task)])
        except Exception as exc:  # noqa: BLE001 - a verdict leaves a failing opponent out, with the reason
            log.info("warm-up: the language model of %s's opponent did not answer (%s)", task.slug, exc)
        spent["opponent"] = time.perf_counter() - started
    return spent


def open_tasks() -> list:
    """The tasks with an open round whose models are an encoder ensemble (a generative kind, chat, has no head to
    warm and no opponent: its language models load on their first answer)."""
    from tasks.models import Task

    return [task for task in Task.objects.filter(rounds__status="open").distinct().order_by("pk")
            if not task.kind_impl.generative]


def open_ensembles() -> list[Ensemble]:
    return list(Ensemble.objects.filter(active=True, round__status="open").select_related("round__task")
                .order_by("pk"))


class Warmer:
    """Warms every open round's active ensemble once in this process, then each newly deployed one."""

    def __init__(self, poll_s: float = POLL_S, explain: bool = True,
                 on_warm: Callable[[Ensemble, dict[str, float]], None] | None = None):
        self.poll_s, self.explain, self.on_warm = poll_s, explain, on_warm
        self.warmed: set[int] = set()
        self.heads: set[str] = set()  # heads whose first-use costs this process has paid
        self.failed: dict[int, tuple[str, float]] = {}  # ensemble -> (why, when)
        self._stop = threading.Event()
        self.thread: threading.Thread | None = None

    def poll_once(self) -> list[int]:
        """Warm the active ensembles of open rounds not warmed yet; returns the ensembles warmed now."""
        done = []
        for ensemble in open_ensembles():
            failed = self.failed.get(ensemble.pk)
            if ensemble.pk in self.warmed or (failed and time.monotonic() - failed[1] < RETRY_S):
                continue
            started = time.perf_counter()
            try:
                spent = warm_ensemble(ensemble, self.explain)
            except Exception as exc:  # noqa: BLE001 - warming never fails anything; scoring loads what it needs
                why = f"{type(exc).__name__}: {exc}"[:300]
                self.failed[ensemble.pk] = (why, time.monotonic())
                log.warning("could not warm the ensemble of %s (tried again in %.0f s): %s", ensemble.round,
                            RETRY_S, why)
                continue
            self.failed.pop(ensemble.pk, None)
            self.warmed.add(ensemble.pk)
            self.heads.add(ensemble.round.task.kind_impl.head)
            done.append(ensemble.pk)
            parts = ", ".join(f"{k} {v:.2f} s" for k, v in spent.items())
            log.info("warmed the ensemble of %s in %.2f s (%s)", ensemble.round, time.perf_counter() - started, parts)
            if self.on_warm:
                self.on_warm(ensemble, spent)
        return done

    def warm_process(self) -> dict[str, float]:
        started = time.perf_counter()
        spent = warm_process(open_tasks(), skip_heads=self.heads)
        self.heads |= {name for name in spent if name != "opponent"}
        if spent:
            parts = ", ".join(f"{k} {v:.2f} s" for k, v in spent.items())
            log.info("warmed this process for the open tasks in %.2f s (%s)", time.perf_counter() - started, parts)
        return spent

    def run(self) -> None:
        from django.apps import apps

        while not apps.ready and not self._stop.is_set():  # started from an AppConfig.ready: the others next
            self._stop.wait(0.1)
        try:  # the ensembles deployed already first, then what any first verdict here would pay
            close_old_connections()
            self.poll_once()
            self.warm_process()
        except Exception as exc:  # noqa: BLE001 - warming never fails anything
            log.warning("warm-up at start: %s", exc)
        finally:
            connection.close()
        while not self._stop.is_set():
            try:
                close_old_connections()
                self.poll_once()
            except Exception as exc:  # noqa: BLE001 - the database is away: try again at the next poll
                log.debug("warmer: %s", exc)
            finally:
                connection.close()  # this thread's own connection: none held between polls
            self._stop.wait(self.poll_s)

    def start(self) -> Warmer:
        self.thread = threading.Thread(target=self.run, name="model-warmer", daemon=True)
        self.thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self.thread is not None:
            self.thread.join(timeout)


_warmer: Warmer | None = None
_lock = threading.Lock()


def start() -> Warmer:
    """This process's warmer (started once)."""
    global _warmer
    with _lock:
        if _warmer is None:
            _warmer = Warmer().start()
        return _warmer


def serving_role(argv: Sequence[str], environ: dict[str, str], jobs_inline: bool) -> str | None:
    """Which kind of scoring process this is, from how it was started (None: it does not score, e.g. a management
    command, a test run, a web server whose jobs go to Celery workers):
    "runserver" (the embedded default's serving process; not the autoreloader's parent, which serves nothing),
    "wsgi" (gunicorn or uWSGI whose jobs run inline, so its requests score), "celery" (a worker: it warms in
    each pool process, `connect_celery`)."""
    program = os.path.basename(argv[0]) if argv else ""
    args = list(argv[1:])
    if args[:1] == ["runserver"]:
        return "runserver" if environ.get("RUN_MAIN") == "true" or "--noreload" in args else None
    if program in ("gunicorn", "uwsgi") or program.startswith("gunicorn"):
        return "wsgi" if jobs_inline else None
    if program == "celery" and "worker" in args:
        return "celery"
    return None


def start_if_serving(argv: Sequence[str] | None = None, environ: dict[str, str] | None = None) -> str | None:
    """Called when the model zoo app is ready: start the warmer in a scoring process (see `serving_role`)."""
    from django.conf import settings

    role = serving_role(list(sys.argv if argv is None else argv), dict(os.environ if environ is None else environ),
                        bool(settings.CELERY_TASK_ALWAYS_EAGER))
    if role in ("runserver", "wsgi"):
        start()
    elif role == "celery":
        connect_celery()
    return role


def connect_celery() -> None:
    """A Celery worker warms in the process that runs its jobs: each prefork pool process once it is forked (a
    thread started before the fork would not survive it), or the worker itself with a pool of threads or solo."""
    from celery.signals import worker_process_init, worker_ready

    def in_pool_process(**_: Any) -> None:
        start()

    def in_worker(sender=None, **_: Any) -> None:  # sender: the worker's consumer, once the worker is up
        pool = getattr(getattr(sender, "controller", None), "pool_cls", "")
        name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
        if "prefork" not in name:  # a prefork worker's jobs run in its pool processes (warmed above)
            start()

    worker_process_init.connect(in_pool_process, weak=False, dispatch_uid="modelzoo-warm-pool-process")
    worker_ready.connect(in_worker, weak=False, dispatch_uid="modelzoo-warm-worker")
