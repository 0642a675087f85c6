"""Celery jobs of the crowd app: thin wrappers over its services (idempotent)."""

from __future__ import annotations

from celery import shared_task

from crowd import badges


@shared_task(name="crowd.derive_badges")
def derive_badges() -> dict[str, tuple[int, int]]:
    """Badges and streaks follow the data: added when earned, removed when no longer earned."""
    return badges.derive()
