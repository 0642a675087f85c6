"""Celery jobs of the rounds app: thin wrappers over the pipeline and upload evaluation."""

from __future__ import annotations

from celery import shared_task

from rounds import runner


@shared_task(name="rounds.run_job", acks_late=True)
def run_rounds_job(job: str, object_id: int) -> None:
    """Run a pipeline (or evaluate an upload). Safe to deliver twice: runs are claimed conditionally."""
    runner.run_job(job, object_id)
