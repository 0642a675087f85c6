"""Small composable DRF permission classes over tasks.roles."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from tasks import roles


def role_required(role: str, message: str | None = None) -> type[BasePermission]:
    """A permission class: the user holds `role` (on the view's task, when the view has one)."""

    class _HasRole(BasePermission):
        def has_permission(self, request, view) -> bool:
            task = getattr(view, "get_task", lambda: None)()
            return roles.has_role(request.user, role, task)

    _HasRole.message = message or f"You need the {role} role for this."
    _HasRole.__name__ = f"Has{role.title()}Role"
    return _HasRole


IsAnnotator = role_required(roles.ANNOTATOR, "Only annotators may write examples.")
IsValidator = role_required(roles.VALIDATOR, "Only validators may validate examples.")
IsExpert = role_required(roles.EXPERT, "Only experts and task owners may do this.")
IsResearcher = role_required(roles.RESEARCHER, "Only researchers, task owners and admins may do this.")
IsTaskOwner = role_required(roles.OWNER, "Only the task's owners and admins may do this.")
IsAdmin = role_required(roles.ADMIN, "Only admins may do this.")
