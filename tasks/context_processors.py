from tasks.roles import manages_any, role_names


def roles(request) -> dict:
    """The viewer's global roles, and whether the navigation offers the owner console (never a link that
    leads to a 403)."""
    user = getattr(request, "user", None)
    if user is None:
        return {"user_roles": set(), "nav_console": False}
    return {"user_roles": role_names(user), "nav_console": manages_any(user)}
