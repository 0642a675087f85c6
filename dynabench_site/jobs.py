"""How every background job is queued: `dispatch(job, *args)`, one way for all of them.

A job is a Celery task declared in its app's `jobs.py`. Jobs that train or evaluate models are declared
long (`@shared_task(..., long_running=True)`). `dispatch` starts a job once the current transaction commits:

- with a broker (`CELERY_BROKER_URL`): `.delay()`, to a Celery worker;
- in the embedded default (no broker, `CELERY_TASK_ALWAYS_EAGER`): a short job runs inline (Celery's eager
  mode, in the caller's process); a long job runs in a subprocess, `manage.py run_job <task name> <args>`,
  so a web request returns at once and never trains a model.

`settings.JOB_RUNNER` overrides where long jobs go: "celery", "subprocess", "thread" (a daemon thread in the
caller's process; browser tests) or "inline" (in the caller, at once; unit tests). "celery" and "inline"
apply to short jobs too. A short job declared `background_thread = True` (the writing assistant's generation)
runs in a daemon thread in the embedded default, so the request that queued it answers at once and the model it
loads stays in the process.

A job that cannot be started (broker down, no process) is handed to `on_failure(exc)`, so the caller can
record it (a pipeline run becomes failed "could not enqueue: …" and can be retried); without one, it is
logged. Arguments must be JSON values (ids, names): they travel through a broker or a command line.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from celery import Task
from django.conf import settings
from django.db import connection, connections, transaction

from dynabench_site.celery import app

log = logging.getLogger(__name__)
RUNNERS = ("celery", "subprocess", "thread", "inline")
OnFailure = Callable[[Exception], None]


def is_long(job: Task) -> bool:
    return bool(getattr(job, "long_running", False))


def runner_for(job: Task) -> str:
    """Where `job` will run: celery, subprocess, thread or inline."""
    chosen = settings.JOB_RUNNER or ""
    if chosen and chosen not in RUNNERS:
        raise ValueError(f"JOB_RUNNER={chosen!r}; expected one of {', '.join(RUNNERS)}")
    embedded = settings.CELERY_TASK_ALWAYS_EAGER
    if chosen in ("celery", "inline"):
        return chosen
    if embedded and getattr(job, "background_thread", False):
        return "thread"  # a job that must not hold the request (a language model writing), and keeps its model
    if not is_long(job):
        return "inline" if embedded else "celery"
    return chosen or ("subprocess" if embedded else "celery")


def dispatch(job: Task, *args: Any, on_failure: OnFailure | None = None) -> str:
    """Start `job(*args)` once the current transaction commits (JOB_RUNNER "inline": at once, in the caller).
    Returns the runner it chose."""
    how = runner_for(job)
    if settings.JOB_RUNNER == "inline":
        _start(how, job, args, on_failure)
    else:
        transaction.on_commit(lambda: _start(how, job, args, on_failure))
    return how


def run(name: str, args: Sequence[Any]) -> Any:
    """Run the registered job `name` here and now (what the subprocess does: `manage.py run_job`)."""
    app.loader.import_default_modules()  # every app's jobs.py, as a worker would load them
    if name not in app.tasks:
        known = sorted(n for n in app.tasks if not n.startswith("celery."))
        raise KeyError(f"unknown job {name!r}; known jobs: {', '.join(known)}")
    return app.tasks[name].apply(args=list(args), throw=True).result


def _start(how: str, job: Task, args: tuple, on_failure: OnFailure | None) -> None:
    try:
        if how == "celery":
            job.delay(*args)
        elif how == "inline":
            _inline(job, args)
        elif how == "thread":
            _thread(job, args)
        else:
            _spawn(job, args)
    except Exception as exc:  # the caller decides what a job that never started means for its data
        log.exception("could not start job %s%s", job.name, args)
        if on_failure is not None:
            on_failure(exc)


def _inline(job: Task, args: tuple) -> None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        job.delay(*args)  # eager: exactly what a worker would do, retries included
    else:
        job.apply(args=list(args), throw=True)


def _thread(job: Task, args: tuple) -> None:
    shared = connections["default"] if _in_memory_db() else None
    threading.Thread(target=_thread_main, args=(job, args, shared), daemon=True, name=f"job-{job.name}").start()


def _in_memory_db() -> bool:
    return bool(getattr(connection, "is_in_memory_db", lambda: False)())


def _thread_main(job: Task, args: tuple, shared) -> None:
    # An in-memory SQLite database (tests) exists only in its connection: share it, as Django's live server does.
    if shared is not None:
        shared.inc_thread_sharing()
        connections["default"] = shared
    try:
        job.apply(args=list(args), throw=True)
    except Exception:  # pragma: no cover - the job records its own failure
        log.exception("job %s%s crashed", job.name, args)
    finally:
        if shared is not None:
            shared.dec_thread_sharing()
        else:
            connections.close_all()


def command(job: Task, args: Sequence[Any]) -> list[str]:
    """The command line that runs `job(*args)` in a process of its own."""
    manage = str(Path(settings.BASE_DIR) / "manage.py")
    return [sys.executable, manage, "run_job", job.name, *(json.dumps(a) for a in args)]


def _spawn(job: Task, args: tuple) -> None:
    logs = Path(settings.VAR_DIR) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    name = "-".join([job.name, *(str(a) for a in args)]).replace("/", "_")
    with open(logs / f"job-{name}.log", "ab") as out:  # the child keeps its own handle
        subprocess.Popen(
            command(job, args), cwd=settings.BASE_DIR, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")},
        )
