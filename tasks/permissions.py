"""Small composable DRF permission classes over tasks.roles."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from tasks import roles
from tasks.access import refusal


def role_required(role: str) -> type[BasePermission]:
    """A permission class: the user holds `role` (on the view's task, when the view has one; see
    `tasks.access.TaskScopedMixin`)."""

    class _HasRole(BasePermission):
        message = refusal(role)

        def has_permission(self, request, view) -> bool:
            task = getattr(view, "get_task", lambda: None)()
            return roles.has_role(request.user, role, task)

    _HasRole.__name__ = f"Has{role.title()}Role"
    return _HasRole


IsAnnotator = role_required(roles.ANNOTATOR)
IsValidator = role_required(roles.VALIDATOR)
IsExpert = role_required(roles.EXPERT)
IsResearcher = role_required(roles.RESEARCHER)
IsTaskOwner = role_required(roles.OWNER)  # owners and admins: roles.can_manage
IsAdmin = role_required(roles.ADMIN)
