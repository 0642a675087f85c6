"""Keep each example's queue row in step when the example is saved (creation in particular); a gold answer's
creation or deletion makes the cached gold counts stale (validation.gold.is_blocked, dynabench_site.access_cache)."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from annotation.models import Example
from annotation.signals import verdict_stored
from dynabench_site.access_cache import bump
from validation.models import GoldAnswer


@receiver(post_save, sender=Example, dispatch_uid="validation.queue_row")
def example_saved(sender, instance: Example, created: bool, raw: bool = False, **kwargs) -> None:
    if raw:  # loaddata: rows arrive without their relations resolved; run sync_validation_queue after
        return
    from validation import queue

    queue.on_example_saved(instance, created)


post_save.connect(bump, sender=GoldAnswer, dispatch_uid="access-save-gold-answer")
post_delete.connect(bump, sender=GoldAnswer, dispatch_uid="access-delete-gold-answer")


@receiver(verdict_stored, dispatch_uid="validation.queue_row_verdict")
def verdict_stored_for(sender, example_id: int, fooled: bool, **kwargs) -> None:
    """The queue row takes the verdict at once (the queue's own `refresh_unscored` is only a safety net)."""
    from validation.models import QueueItem

    QueueItem.objects.filter(pk=example_id).update(fooled=fooled)
