"""Celery jobs of the hardness module: thin wrappers over hardness.services."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task


@shared_task(name="hardness.seed_round", ignore_result=True)
def seed_round_job(round_id: int, k: int, score: str = "loss") -> dict:
    """Seed a round with the weak scorer (idempotent, so a retried job does no harm)."""
    from hardness.services import seed_round
    from tasks.models import Round

    rnd = Round.objects.select_related("task").get(pk=round_id)
    return asdict(seed_round(rnd.task, rnd, k, score=score))
