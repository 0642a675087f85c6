"""Who may download what. Published snapshots follow their audience; live (unpublished) data is for
the task's owners and admins. A task the user cannot see does not exist for them (404, not 403).
"""

from __future__ import annotations

from exports.models import DatasetSnapshot
from tasks import roles
from tasks.models import Task


def can_see(user, task: Task) -> bool:
    return Task.objects.visible_to(user).filter(pk=task.pk).exists()


def can_manage(user, task: Task) -> bool:
    """Download unpublished data and publish snapshots: owners and admins."""
    return roles.is_owner(user, task)


def _audience_allows(user, task: Task, audience: str) -> bool:
    if audience == DatasetSnapshot.Audience.PUBLIC or can_manage(user, task):
        return True
    return roles.has_role(user, roles.RESEARCHER, task)


def can_download(user, snapshot: DatasetSnapshot) -> bool:
    return can_see(user, snapshot.task) and _audience_allows(user, snapshot.task, snapshot.audience)


def downloadable(user, task: Task) -> list[DatasetSnapshot]:
    """The task's published snapshots this user may download."""
    if not can_see(user, task):
        return []
    snapshots = DatasetSnapshot.objects.filter(task=task).select_related("round", "task")
    return [s for s in snapshots if _audience_allows(user, task, s.audience)]
