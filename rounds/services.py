"""Use cases of the owner console: start, retry and abandon the round pipeline; who may do so."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from dynabench_site import errors
from dynabench_site.jobs import dispatch, runner_for
from dynabench_site.text import check_optional_text, quote
from rounds import jobs, pipeline
from rounds.models import UNFINISHED, PipelineRun, PipelineStep
from rounds.options import pipeline_options
from tasks import roles
from tasks.models import Round, Task


class PipelineBusy(errors.Conflict):
    """A run is already unfinished for the task (or not in a state for this action); the message says which
    and what to do."""

    def __init__(self, message: str, run: PipelineRun | None = None):
        super().__init__(message, extra={"job": run.pk if run else None})  # the answer names the run in the way
        self.run = run


def check_can_run(user, task: Task) -> None:
    if not roles.can_manage(user, task):
        raise PermissionDenied("Only the task's owners and admins may close a round and open the next.")


def unfinished_run(task: Task) -> PipelineRun | None:
    return PipelineRun.objects.filter(task=task, status__in=UNFINISHED).first()


def busy_message(run: PipelineRun) -> str:
    if run.status == PipelineRun.Status.AWAITING:
        return (f"Pipeline #{run.pk} for this task awaits approval: its new ensemble is worse than the live one. "
                f"Approve it (deploy) or discard it (keep the live ensemble) before opening another round.")
    if run.status == PipelineRun.Status.FAILED:
        step = run.steps.filter(status=PipelineStep.Status.FAILED).first()
        where = f" at step “{step.name}”" if step else ""
        return (f"Pipeline #{run.pk} for this task failed{where}. Retry it (finished steps are kept) "
                f"or abandon it before opening another round.")
    step = run.steps.exclude(status=PipelineStep.Status.DONE).order_by("position").first()
    where = f" (now: {step.name})" if step else ""
    return (f"Pipeline #{run.pk} is already {run.status} for this task{where}. "
            f"Only one can run at a time; wait for it to finish.")


def start_pipeline(task: Task, user, options: dict[str, Any] | None = None, description: str = "") -> PipelineRun:
    """Close the task's current round and open the next, as a background pipeline. Returns the run."""
    check_can_run(user, task)
    description = check_optional_text(description, "description")
    opts = pipeline_options(options, task)
    existing = unfinished_run(task)
    if existing is not None:
        raise PipelineBusy(busy_message(existing), existing)
    source = task.current_round or task.rounds.exclude(status=Round.Status.DRAFT).order_by("-number").first()
    try:
        with transaction.atomic():
            run = PipelineRun.objects.create(
                task=task, from_round=source, options=opts.model_dump(), description=description[:500],
                started_by=user if getattr(user, "is_authenticated", False) else None,
                runner=runner_for(jobs.run_pipeline),
            )
            pipeline.create_steps(run)
    except IntegrityError:  # another request won the race; the partial unique index refused this one
        existing = unfinished_run(task)
        raise PipelineBusy(busy_message(existing) if existing else "Another pipeline has just started.") from None
    enqueue(run)
    return run


def enqueue(run: PipelineRun) -> None:
    """Queue the run; one that cannot be queued (broker down) becomes failed, so it can be retried."""
    dispatch(jobs.run_pipeline, run.pk, on_failure=lambda exc: pipeline.fail_unqueued(run.pk, exc))


def retry_pipeline(run: PipelineRun, user) -> PipelineRun:
    """Run a failed (or stalled) pipeline again from its failed step."""
    check_can_run(user, run.task)
    if not pipeline.reset_for_retry(run):
        raise PipelineBusy(f"Pipeline #{run.pk} is {run.status}; only a failed or stalled pipeline can be retried.", run)
    enqueue(run)
    return run


def abandon_pipeline(run: PipelineRun, user) -> PipelineRun:
    """Give up a failed, stuck or awaiting run, which frees the task's slot for another one. What it finished
    stays: a closed round stays closed, the next round stays a draft, models it trained stay ready (not
    deployed). Closing again starts a new run that picks up from the closed round."""
    check_can_run(user, run.task)
    if pipeline.is_stale(run):
        pipeline.mark_stale_failed(run)
    updated = PipelineRun.objects.filter(
        pk=run.pk, status__in=[PipelineRun.Status.FAILED, PipelineRun.Status.AWAITING]
    ).update(status=PipelineRun.Status.ABANDONED, finished_at=timezone.now())
    if not updated:
        run.refresh_from_db()
        raise PipelineBusy(f"Pipeline #{run.pk} is {run.status}; only a failed, stuck or awaiting pipeline can be "
                           f"abandoned (a running one is abandoned once it has been silent for "
                           f"{pipeline.stale_after_s()} s).", run)
    run.refresh_from_db()
    return run


def decide_pipeline(run: PipelineRun, user, decision: str) -> PipelineRun:
    """An owner's answer to a run awaiting approval: "approved" deploys the new ensemble, "discarded" keeps the
    live one; either way the run continues (seeding, deployment, opening the next round)."""
    check_can_run(user, run.task)
    if decision not in (PipelineRun.Decision.APPROVED, PipelineRun.Decision.DISCARDED):
        raise errors.InvalidInput(f"decision must be approved or discarded, not {quote(decision)}", field="decision")
    now = timezone.now()
    updated = PipelineRun.objects.filter(pk=run.pk, status=PipelineRun.Status.AWAITING).update(
        status=PipelineRun.Status.PENDING, decision=decision, decided_by=user, decided_at=now, heartbeat_at=now,
        finished_at=None, error="",
    )
    if not updated:
        run.refresh_from_db()
        raise PipelineBusy(f"Pipeline #{run.pk} is {run.status}; only a pipeline awaiting approval can be approved "
                           f"or discarded.", run)
    run.refresh_from_db()
    enqueue(run)
    return run


def approve_pipeline(run: PipelineRun, user) -> PipelineRun:
    return decide_pipeline(run, user, PipelineRun.Decision.APPROVED)


def discard_pipeline(run: PipelineRun, user) -> PipelineRun:
    return decide_pipeline(run, user, PipelineRun.Decision.DISCARDED)
