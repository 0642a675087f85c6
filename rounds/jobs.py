"""Celery jobs of the rounds app: thin wrappers over the pipeline and upload evaluation.

Both train or evaluate models, so they are long jobs: `dynabench_site.jobs.dispatch` never runs them inside a
web request (a Celery worker with a broker, a subprocess in the embedded default)."""

from __future__ import annotations

from celery import shared_task

from dynabench_site.jobs import dispatch
from rounds import evaluation, pipeline


@shared_task(name="rounds.run_pipeline", acks_late=True, ignore_result=True, long_running=True)
def run_pipeline(run_id: int) -> str:
    """Run (or resume) a pipeline run. Safe to deliver twice: runs and steps are claimed conditionally."""
    return pipeline.execute(run_id).status


@shared_task(name="rounds.evaluate_upload", acks_late=True, ignore_result=True, long_running=True)
def evaluate_upload(upload_id: int) -> str:
    """Score a researcher's upload on every test set of its task."""
    return evaluation.evaluate_upload(upload_id).status


@shared_task(name="rounds.resume_silent_pipelines", ignore_result=True)
def resume_silent_pipelines() -> int:
    """Beat sweep: queue again every running run whose worker went silent (killed mid-step); `pipeline.claim`
    takes it over and the interrupted step runs again."""
    ids = pipeline.silent_runs()
    for run_id in ids:
        dispatch(run_pipeline, run_id)
    return len(ids)
