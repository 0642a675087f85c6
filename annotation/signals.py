"""What annotation announces to the apps above it (it imports none of them).

`verdict_stored(example_id, fooled)`: an example's verdict was stored (annotation.scoring; a queryset update, so
no post_save). validation keeps the example's queue row in step at once (validation.signals).
"""

from __future__ import annotations

from django.dispatch import Signal

verdict_stored = Signal()
