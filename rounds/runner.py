"""How background jobs start: a Celery worker when a broker is configured; otherwise (the embedded default)
a subprocess (`manage.py rounds_job`), so that a web request returns at once and training never runs
inside the web process. `ROUNDS_JOB_RUNNER` = celery | subprocess | thread | inline overrides the choice
("thread" and "inline" are for tests and single-process demos)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection, connections, transaction

log = logging.getLogger(__name__)
MODES = ("celery", "subprocess", "thread", "inline")


def jobs() -> dict[str, Callable[[int], object]]:
    from rounds import pipeline, uploads

    return {"pipeline": pipeline.execute, "evaluate_upload": uploads.evaluate_upload}


def mode() -> str:
    chosen = getattr(settings, "ROUNDS_JOB_RUNNER", "") or os.environ.get("ROUNDS_JOB_RUNNER", "")
    if chosen:
        if chosen not in MODES:
            raise ValueError(f"ROUNDS_JOB_RUNNER={chosen!r}; expected one of {', '.join(MODES)}")
        return chosen
    return "subprocess" if settings.CELERY_TASK_ALWAYS_EAGER else "celery"


def dispatch(job: str, object_id: int) -> None:
    """Start `job` for `object_id` once the current transaction commits ("inline": right now)."""
    if job not in jobs():
        raise KeyError(f"unknown job {job!r}")
    how = mode()
    if how == "inline":
        run_job(job, object_id)
    else:
        transaction.on_commit(lambda: _start(how, job, object_id))


def run_job(job: str, object_id: int) -> None:
    jobs()[job](object_id)


def _start(how: str, job: str, object_id: int) -> None:
    if how == "celery":
        from rounds.jobs import run_rounds_job

        run_rounds_job.delay(job, object_id)
    elif how == "thread":
        shared = connections["default"] if _in_memory_db() else None
        threading.Thread(target=_thread_main, args=(job, object_id, shared), daemon=True,
                         name=f"rounds-{job}-{object_id}").start()
    else:
        _spawn(job, object_id)


def _in_memory_db() -> bool:
    return bool(getattr(connection, "is_in_memory_db", lambda: False)())


def _thread_main(job: str, object_id: int, shared) -> None:
    # An in-memory SQLite database (tests) exists only in its connection: share it, as Django's live server does.
    if shared is not None:
        shared.inc_thread_sharing()
        connections["default"] = shared
    try:
        run_job(job, object_id)
    except Exception:  # pragma: no cover - the job records its own failure
        log.exception("rounds job %s %s crashed", job, object_id)
    finally:
        if shared is not None:
            shared.dec_thread_sharing()
        else:
            connections.close_all()


def _spawn(job: str, object_id: int) -> None:
    logs = Path(settings.VAR_DIR) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    out = open(logs / f"rounds-{job}-{object_id}.log", "ab")  # noqa: SIM115 - the child owns it
    subprocess.Popen(
        [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "rounds_job", job, str(object_id)],
        cwd=settings.BASE_DIR, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "DJANGO_SETTINGS_MODULE": os.environ.get(
            "DJANGO_SETTINGS_MODULE", "dynabench_site.settings")},
    )
    out.close()
