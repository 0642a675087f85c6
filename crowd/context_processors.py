from crowd.models import Assignment


def assignment(request) -> dict:
    """A worker who came through an external link sees their open assignment in the top bar."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"current_assignment": Assignment.objects.filter(user=user, state=Assignment.State.ACTIVE)
            .select_related("batch__task").order_by("-followed_at").first()}
