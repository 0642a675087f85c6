"""The round pipeline as a resumable state machine over PipelineStep rows.

A run executes its steps in order and skips the ones already done, so running it again after a failure
redoes only the failed step and what follows. Runs and steps are claimed with conditional updates: two
workers never execute the same run, and a step is never done twice at once.
"""

from __future__ import annotations

import logging
import traceback
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone

from notify import events as notify_events
from rounds import steps
from rounds.context import StepContext, StepFn
from rounds.models import PipelineRun, PipelineStep

log = logging.getLogger(__name__)
Run, Step = PipelineRun.Status, PipelineStep.Status


def step_registry() -> list[tuple[str, str, StepFn]]:
    return steps.STEPS


def step_labels() -> dict[str, str]:
    return {name: label for name, label, _ in step_registry()}


def create_steps(run: PipelineRun) -> None:
    PipelineStep.objects.bulk_create(
        [PipelineStep(run=run, name=name, position=i) for i, (name, _, _) in enumerate(step_registry())]
    )


def takeover_after_s() -> int:
    return int(settings.ROUNDS_PIPELINE_TAKEOVER_S)


def claim(run_id: int) -> PipelineRun | None:
    """Pending -> running, once. A running run whose worker went silent for longer than ROUNDS_PIPELINE_TAKEOVER_S
    (its process was killed mid-step: the job is redelivered, or `resume_silent` queues it again) is taken over:
    the step it was in runs again, which is safe because every step is idempotent."""
    now = timezone.now()
    claimed = PipelineRun.objects.filter(pk=run_id, status=Run.PENDING).update(status=Run.RUNNING, heartbeat_at=now)
    if not claimed:
        cutoff = now - timedelta(seconds=takeover_after_s())
        claimed = PipelineRun.objects.filter(pk=run_id, status=Run.RUNNING, heartbeat_at__lt=cutoff).update(
            heartbeat_at=now)
        if claimed:
            PipelineStep.objects.filter(run_id=run_id, status=Step.RUNNING).update(
                status=Step.PENDING, log=Concat("log", Value(f"{now:%H:%M:%S} taken over: the worker running this step stopped "
                                        f"reporting for over {takeover_after_s()} s; the step runs again\n")))
    if not claimed:
        return None
    run = PipelineRun.objects.select_related("task", "from_round", "to_round").get(pk=run_id)
    if run.started_at is None:
        PipelineRun.objects.filter(pk=run_id).update(started_at=now)
        run.started_at = now
    return run


def silent_runs() -> list[int]:
    """Running runs whose worker stopped reporting for longer than ROUNDS_PIPELINE_TAKEOVER_S (to be taken over)."""
    cutoff = timezone.now() - timedelta(seconds=takeover_after_s())
    return list(PipelineRun.objects.filter(status=Run.RUNNING, heartbeat_at__lt=cutoff).values_list("pk", flat=True))


def execute(run_id: int) -> PipelineRun:
    """Run every step that is not done yet. Returns the run (done, failed, or untouched when not pending)."""
    run = claim(run_id)
    if run is None:
        return PipelineRun.objects.get(pk=run_id)
    functions = {name: fn for name, _, fn in step_registry()}
    for step in run.steps.order_by("position"):
        if step.status == Step.DONE:
            continue
        try:
            error = run_step(run, step, functions[step.name])
        except steps.AwaitingApproval:
            return finish(run, Run.AWAITING, "")
        if error is not None:
            return finish(run, Run.FAILED, f"step {step.name} failed: {error}")
    return finish(run, Run.DONE, "")


def run_step(run: PipelineRun, step: PipelineStep, fn: StepFn) -> str | None:
    """Execute one step; None on success, else the error message (also stored on the step)."""
    started = timezone.now()
    claimed = PipelineStep.objects.filter(pk=step.pk, status__in=[Step.PENDING, Step.FAILED, Step.WAITING]).update(
        status=Step.RUNNING, attempts=F("attempts") + 1, started_at=started, finished_at=None, error="", progress=0.0
    )
    if not claimed:
        return f"step {step.name} is already {PipelineStep.objects.get(pk=step.pk).status}"
    step.refresh_from_db()
    ctx = StepContext(run, step)
    try:
        result = fn(ctx) or {}
    except steps.AwaitingApproval as wait:  # not a failure: the run stops here until an owner decides
        ctx.log(f"AWAITING APPROVAL: {wait}")
        PipelineStep.objects.filter(pk=step.pk).update(status=Step.WAITING, message=str(wait)[:300],
                                                       finished_at=timezone.now())
        raise
    except Exception as exc:  # a step failure is data for the owner, not a crash of the worker
        message = f"{type(exc).__name__}: {exc}"
        log.exception("pipeline %s step %s failed", run.pk, step.name)
        ctx.log(f"FAILED: {message}\n{_short_traceback()}")
        PipelineStep.objects.filter(pk=step.pk).update(status=Step.FAILED, error=message[:5000], finished_at=timezone.now())
        return message
    PipelineStep.objects.filter(pk=step.pk).update(
        status=Step.DONE, progress=1.0, result={**ctx.step.result, **result}, finished_at=timezone.now()
    )
    return None


def _short_traceback() -> str:
    return "".join(traceback.format_exc().splitlines(keepends=True)[-12:])


def finish(run: PipelineRun, status: str, error: str) -> PipelineRun:
    PipelineRun.objects.filter(pk=run.pk).update(status=status, error=error[:5000], finished_at=timezone.now())
    run.refresh_from_db()
    notify_events.pipeline_stopped(run)  # waiting for approval, or failed: the owners' webhooks and mail
    return run


def fail_unqueued(run_id: int, error: Exception) -> bool:
    """A run whose job could not be queued (broker down): failed, not pending for ever, so it can be retried."""
    failed = bool(PipelineRun.objects.filter(pk=run_id, status=Run.PENDING).update(
        status=Run.FAILED, error=f"could not enqueue: {type(error).__name__}: {error}"[:5000], finished_at=timezone.now()
    ))
    if failed:
        notify_events.pipeline_stopped(PipelineRun.objects.select_related("task").get(pk=run_id))
    return failed


def stale_after_s() -> int:
    return int(settings.ROUNDS_PIPELINE_STALE_S)


def is_stale(run: PipelineRun) -> bool:
    """Stuck: a running run whose worker stopped reporting (killed, crashed machine), or a pending run no worker
    picked up (its message was lost), for longer than ROUNDS_PIPELINE_STALE_S (default 30 minutes). A running
    step reports progress at least every few seconds, so silence that long means nobody works on it."""
    if run.status == Run.RUNNING and run.heartbeat_at is not None:
        last = run.heartbeat_at
    elif run.status == Run.PENDING:
        last = run.heartbeat_at or run.created_at
    else:
        return False
    return (timezone.now() - last).total_seconds() > stale_after_s()


def mark_stale_failed(run: PipelineRun) -> bool:
    if run.status == Run.PENDING:
        message = f"no worker picked the run up for over {stale_after_s()} s"
    else:
        message = f"the worker stopped reporting (no progress for over {stale_after_s()} s)"
    updated = PipelineRun.objects.filter(pk=run.pk, status=run.status, heartbeat_at=run.heartbeat_at).update(
        status=Run.FAILED, error=message, finished_at=timezone.now()
    )
    if updated:
        run.steps.filter(status=Step.RUNNING).update(status=Step.FAILED, error=message, finished_at=timezone.now())
    return bool(updated)


def reset_for_retry(run: PipelineRun) -> bool:
    """Failed -> pending; the failed step will run again, finished steps stay done."""
    if is_stale(run):
        mark_stale_failed(run)
    updated = PipelineRun.objects.filter(pk=run.pk, status=Run.FAILED).update(
        status=Run.PENDING, error="", finished_at=None, heartbeat_at=timezone.now()
    )
    run.refresh_from_db()
    return bool(updated)


def snapshot(run: PipelineRun) -> dict[str, Any]:
    """The run's state for the console and the API."""
    steps = list(run.steps.order_by("position"))
    labels = step_labels()
    stale = is_stale(run)
    done = sum(1 for s in steps if s.status == Step.DONE)
    partial = sum(s.progress for s in steps if s.status == Step.RUNNING)
    return {
        "id": run.pk, "task": run.task.slug, "status": run.status, "error": run.error,
        "from_round": run.from_round.number if run.from_round else None,
        "to_round": run.to_round.number if run.to_round else None,
        "progress": round((done + partial) / len(steps), 4) if steps else 0.0,
        "created_at": run.created_at, "started_at": run.started_at, "finished_at": run.finished_at,
        "seconds": _round(run.seconds), "options": run.options, "stale": stale,
        "comparison": run.comparison, "decision": run.decision,
        "decided_by": run.decided_by.username if run.decided_by_id else None, "decided_at": run.decided_at,
        "actions": {"retry": run.status == Run.FAILED or stale, "abandon": can_abandon(run),
                    "approve": run.status == Run.AWAITING, "discard": run.status == Run.AWAITING},
        "steps": [_step_row(s, labels.get(s.name, s.name)) for s in steps],
    }


def can_abandon(run: PipelineRun) -> bool:
    """Failed, awaiting approval, or stuck: giving it up frees the task's one unfinished-run slot."""
    return run.status in (Run.FAILED, Run.AWAITING) or is_stale(run)


def _step_row(step: PipelineStep, label: str) -> dict[str, Any]:
    return {"name": step.name, "label": label, "status": step.status, "progress": step.progress,
            "message": step.message, "error": step.error, "log": step.log, "attempts": step.attempts,
            "seconds": _round(step.seconds), "result": step.result}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
