from tasks.roles import role_names


def roles(request) -> dict:
    user = getattr(request, "user", None)
    return {"user_roles": role_names(user) if user is not None else set()}
