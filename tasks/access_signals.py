"""Writes that change what a request may see or do on a task replace the access generation
(dynabench_site.access_cache): a task's save or deletion (visibility, config, active), a change of its owners, a
round's (open, closed), a grant, a suspension, new guidelines and their acknowledgements. The queryset updates of
these rows (tasks.round_state, crowd.members) call `bump` themselves."""

from __future__ import annotations

from django.db.models.signals import m2m_changed, post_delete, post_save

from dynabench_site.access_cache import bump
from tasks.models import Guidelines, GuidelinesAcknowledgement, Round, Suspension, Task, TaskMembership


def connect() -> None:
    for model in (Task, Round, TaskMembership, Suspension, Guidelines, GuidelinesAcknowledgement):
        post_save.connect(bump, sender=model, dispatch_uid=f"access-save-{model._meta.label}")
        post_delete.connect(bump, sender=model, dispatch_uid=f"access-delete-{model._meta.label}")
    m2m_changed.connect(bump, sender=Task.owners.through, dispatch_uid="access-task-owners")
