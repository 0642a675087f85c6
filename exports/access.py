"""Who may download what. Published snapshots follow their audience; live (unpublished) data is for
the task's owners and admins (`tasks.roles.can_manage`). A task the user cannot see does not exist for
them (404, not 403; `tasks.access`).
"""

from __future__ import annotations

from exports.models import DatasetSnapshot
from tasks import roles
from tasks.access import visible_tasks
from tasks.models import Task


def can_see(user, task: Task) -> bool:
    return visible_tasks(user).filter(pk=task.pk).exists()


def _audience_allows(user, task: Task, audience: str) -> bool:
    if audience == DatasetSnapshot.Audience.PUBLIC or roles.can_manage(user, task):
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
