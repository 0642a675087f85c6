"""Personas and their roles.

Global roles are Django groups (annotator, validator, expert, researcher), assigned by staff; roles on one
task are `TaskMembership` rows (a passed quiz, an owner's appointment, a worker link, the demo); task
ownership is the Task.owners relation; admins are staff or superusers. A suspension from a task takes
every role there away. Every permission check goes through `has_role` (or `can_manage`, the owner rule it
uses), so the rules live in one place and are tested as one allow/deny matrix.

New sign-ups get only the global annotator role: they write where the task does not ask writers for a
quiz, and validate a task only once they passed its validator quiz (or an owner appointed them).
"""

from __future__ import annotations

from django.contrib.auth.models import Group

from dynabench_site import access_cache
from tasks.models import Suspension, TaskMembership

ANNOTATOR = "annotator"
VALIDATOR = "validator"
EXPERT = "expert"
RESEARCHER = "researcher"
OWNER = "owner"
ADMIN = "admin"

GROUP_ROLES = (ANNOTATOR, VALIDATOR, EXPERT, RESEARCHER)
TASK_ROLES = (ANNOTATOR, VALIDATOR, EXPERT)
# What a new sign-up may do: write examples. Validating needs the task's quiz (or an owner's appointment).
SIGNUP_ROLES = (ANNOTATOR,)


def is_admin(user) -> bool:
    return bool(user.is_authenticated and (user.is_superuser or user.is_staff))


def can_manage(user, task) -> bool:
    """May configure this task, run its rounds and see its unpublished data: its owners and admins.
    The one name for this rule; every app asks it (`has_role(user, OWNER, task)` is this rule too)."""
    if not user.is_authenticated:
        return False
    return is_admin(user) or (task is not None and task.pk in _facts(user)["owned"])


def manages_any(user) -> bool:
    """May open the owner console: admins, and owners of at least one task (the navigation asks this)."""
    if not user.is_authenticated:
        return False
    return is_admin(user) or bool(_facts(user)["owned"])


def _facts(user) -> dict[str, set]:
    """What the role rules read of a user: global groups, per-task grants, open suspensions and owned tasks. Read
    once per user object, and from the access cache (dynabench_site.access_cache) when a request read them lately:
    every grant, revocation, suspension, lift, group or owner change replaces the access generation."""
    facts = user.__dict__.get("_access_facts")
    if facts is None:
        name = access_cache.key("roles", user.pk)
        facts, generation = access_cache.lookup(name)
        if facts is access_cache.MISSING:
            facts = {
                "groups": set(user.groups.values_list("name", flat=True)),
                "grants": set(TaskMembership.objects.filter(user_id=user.pk).values_list("task_id", "role")),
                "suspended": set(Suspension.objects.filter(user_id=user.pk, lifted_at__isnull=True)
                                 .values_list("task_id", flat=True)),
                "owned": set(user.owned_tasks.values_list("pk", flat=True)),
            }
            access_cache.put(name, facts, generation)
        user._access_facts = facts
    return facts


def _in_group(user, role: str) -> bool:
    return user.is_authenticated and role in _facts(user)["groups"]


def _grants(user) -> set[tuple[int, str]]:
    """(task id, role) of every per-task grant."""
    return _facts(user)["grants"]


def granted(user, task, role: str) -> bool:
    return task is not None and (task.pk, role) in _grants(user)


def is_suspended(user, task) -> bool:
    if task is None or not user.is_authenticated:
        return False
    return task.pk in _facts(user)["suspended"]


def _qualified(user, role: str, task) -> bool:
    """A writer or validator role: granted on the task, or held globally where the task asks no quiz."""
    if granted(user, task, role):
        return True
    return _in_group(user, role) and (task is None or not task.typed_config.crowd.needs_quiz(role))


def has_role(user, role: str, task=None) -> bool:
    """Whether `user` acts as `role` (on `task`, for task-scoped roles). Suspended from `task`: no role."""
    if not user.is_authenticated:
        return False
    if role == ADMIN:
        return is_admin(user)
    if is_suspended(user, task):
        return False
    if role == OWNER:
        return task is not None and can_manage(user, task)
    if role == EXPERT:
        return (_in_group(user, EXPERT) or granted(user, task, EXPERT) or (task is not None and can_manage(user, task))
                or is_admin(user))
    if role == VALIDATOR:
        return _qualified(user, VALIDATOR, task) or has_role(user, EXPERT, task)
    if role == RESEARCHER:
        return _in_group(user, RESEARCHER) or (task is not None and can_manage(user, task)) or is_admin(user)
    if role == ANNOTATOR:
        return _qualified(user, ANNOTATOR, task)
    raise ValueError(f"unknown role {role!r}")


def forget(user) -> None:
    """Drop the cached roles of this user object (after a grant, a revocation or a suspension)."""
    user.__dict__.pop("_access_facts", None)


def grant(user, *roles: str) -> None:
    for role in roles:
        if role not in GROUP_ROLES:
            raise ValueError(f"{role!r} is not a global role; use Task.owners or is_staff")
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    forget(user)


def grant_on_task(user, task, role: str, source: str, by=None) -> TaskMembership:
    """Give `user` `role` on `task` (idempotent: an existing grant keeps its first source)."""
    if role not in TASK_ROLES:
        raise ValueError(f"{role!r} is not a role held per task")
    membership, _ = TaskMembership.objects.get_or_create(
        task=task, user=user, role=role, defaults={"source": source, "granted_by": by}
    )
    forget(user)
    return membership


def revoke_on_task(user, task, role: str) -> int:
    removed = TaskMembership.objects.filter(task=task, user=user, role=role).delete()[0]
    forget(user)
    return removed


def role_names(user, task=None) -> set[str]:
    return {role for role in (*GROUP_ROLES, OWNER, ADMIN) if has_role(user, role, task)}
