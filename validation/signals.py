"""Keep each example's queue row in step when the example is saved (creation in particular)."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from annotation.models import Example


@receiver(post_save, sender=Example, dispatch_uid="validation.queue_row")
def example_saved(sender, instance: Example, created: bool, raw: bool = False, **kwargs) -> None:
    if raw:  # loaddata: rows arrive without their relations resolved; run sync_validation_queue after
        return
    from validation import queue

    queue.on_example_saved(instance, created)
