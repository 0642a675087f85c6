"""Personas and their roles.

Global roles are Django groups (annotator, validator, expert, researcher); task ownership is the
Task.owners relation; admins are staff or superusers. Every permission check goes through
`has_role` (or `can_manage`, the owner rule it uses), so the rules live in one place and are tested as
one allow/deny matrix.
"""

from __future__ import annotations

from django.contrib.auth.models import Group

ANNOTATOR = "annotator"
VALIDATOR = "validator"
EXPERT = "expert"
RESEARCHER = "researcher"
OWNER = "owner"
ADMIN = "admin"

GROUP_ROLES = (ANNOTATOR, VALIDATOR, EXPERT, RESEARCHER)
# What a new sign-up may do: write examples and validate other people's.
SIGNUP_ROLES = (ANNOTATOR, VALIDATOR)


def is_admin(user) -> bool:
    return bool(user.is_authenticated and (user.is_superuser or user.is_staff))


def can_manage(user, task) -> bool:
    """May configure this task, run its rounds and see its unpublished data: its owners and admins.
    The one name for this rule; every app asks it (`has_role(user, OWNER, task)` is this rule too)."""
    if not user.is_authenticated:
        return False
    return is_admin(user) or task.owners.filter(pk=user.pk).exists()


def _in_group(user, role: str) -> bool:
    if not user.is_authenticated:
        return False
    cache = getattr(user, "_role_cache", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        user._role_cache = cache
    return role in cache


def has_role(user, role: str, task=None) -> bool:
    """Whether `user` acts as `role` (on `task`, for task-scoped roles)."""
    if not user.is_authenticated:
        return False
    if role == ADMIN:
        return is_admin(user)
    if role == OWNER:
        return task is not None and can_manage(user, task)
    if role == EXPERT:
        return _in_group(user, EXPERT) or (task is not None and can_manage(user, task)) or is_admin(user)
    if role == VALIDATOR:
        return _in_group(user, VALIDATOR) or has_role(user, EXPERT, task)
    if role == RESEARCHER:
        return _in_group(user, RESEARCHER) or (task is not None and can_manage(user, task)) or is_admin(user)
    if role == ANNOTATOR:
        return _in_group(user, ANNOTATOR)
    raise ValueError(f"unknown role {role!r}")


def grant(user, *roles: str) -> None:
    for role in roles:
        if role not in GROUP_ROLES:
            raise ValueError(f"{role!r} is not a global role; use Task.owners or is_staff")
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    user.__dict__.pop("_role_cache", None)


def role_names(user, task=None) -> set[str]:
    return {role for role in (*GROUP_ROLES, OWNER, ADMIN) if has_role(user, role, task)}
