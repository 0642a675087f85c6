"""Celery jobs of the crowd app: thin wrappers over its services (idempotent)."""

from __future__ import annotations

from celery import shared_task

from crowd import badges


@shared_task(name="crowd.derive_badges")
def derive_badges() -> dict[str, tuple[int, int]]:
    """Badges and streaks follow the data: added when earned, removed when no longer earned."""
    return badges.derive()


@shared_task(name="crowd.lifecycle_sweep")
def lifecycle_sweep() -> dict[str, int]:
    """The crowd platform's lifecycle: assignments past their time limit time out (their place is freed), and the
    platform's submissions are polled where its webhooks may not reach this site. Never raises: a platform that
    is down is logged, kept on its batch, and polled again next time."""
    from crowd import platform

    try:
        return platform.sweep()
    except Exception:  # noqa: BLE001 - the beat loop must go on; the next sweep tries again
        import logging

        logging.getLogger(__name__).exception("crowd lifecycle sweep failed")
        return {"timed_out": 0, "polled": 0, "changed": 0, "failed": 1}
