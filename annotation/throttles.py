"""Per-user submission throttling whose rate comes from the task's `submission_rate` setting."""

from __future__ import annotations

from rest_framework.throttling import UserRateThrottle


class TaskSubmissionThrottle(UserRateThrottle):
    """Counts one user's submissions to one task; over the limit DRF answers 429 with Retry-After.

    The rate is the task's `submission_rate` ("30/min"); views without a task fall back to the
    `submissions` rate of REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"].
    """

    scope = "submissions"

    def __init__(self) -> None:  # the rate is known only once the view's task is
        pass

    def allow_request(self, request, view) -> bool:
        task = getattr(view, "get_task", lambda: None)()
        self.rate = task.typed_config.submission_rate if task is not None else self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.task_slug = task.slug if task is not None else "-"
        return super().allow_request(request, view)

    def get_cache_key(self, request, view) -> str | None:
        if not request.user.is_authenticated:
            return None  # anonymous callers are refused by the permissions anyway
        return f"throttle_{self.scope}_{self.task_slug}_{request.user.pk}"


class SandboxThrottle(TaskSubmissionThrottle):
    """Sandbox scoring costs model time too: the same rate, counted separately."""

    scope = "sandbox"
