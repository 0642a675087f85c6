"""Per-user submission throttling whose rate comes from the task's `submission_rate` setting.

Counted by the site's rate limiter (dynabench_site.throttles): over the limit the answer is 429 with
Retry-After; a cache outage lets the submission through, so it is still saved first.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import exceptions
from rest_framework.throttling import BaseThrottle

from dynabench_site import throttles


class TaskSubmissionThrottle(BaseThrottle):
    """Counts one user's submissions to one task. The rate is the task's `submission_rate` ("30/min");
    views without a task fall back to the `submissions` rate of REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]."""

    scope = "submissions"
    message = "You are submitting faster than this task allows ({rate}); try again in {wait}."

    def allow_request(self, request, view) -> bool:
        if not request.user.is_authenticated:
            return True  # anonymous callers are refused by the permissions anyway
        task = getattr(view, "get_task", lambda: None)()
        rate = task.typed_config.submission_rate if task is not None else settings.REST_FRAMEWORK[
            "DEFAULT_THROTTLE_RATES"]["submissions"]
        ident = f"{task.slug if task is not None else '-'}:user:{request.user.pk}"
        wait = throttles.hit(self.scope, [ident], rate)
        if wait is not None:
            raise exceptions.Throttled(wait=wait, detail=self.message.format(rate=rate, wait=throttles.wait_text(wait)))
        return True


class SandboxThrottle(TaskSubmissionThrottle):
    """Sandbox scoring costs model time too: the same rate, counted separately."""

    scope = "sandbox"


class SuggestionThrottle(BaseThrottle):
    """The writing assistant costs a language model's time: ASSISTANT_RATE requests per writer and task."""

    scope = "suggestions"
    message = "You are asking for suggestions faster than this site allows ({rate}); try again in {wait}."

    def allow_request(self, request, view) -> bool:
        if not request.user.is_authenticated:
            return True
        task = view.get_task()
        rate = settings.ASSISTANT_RATE
        wait = throttles.hit(self.scope, [f"{task.slug}:user:{request.user.pk}"], rate)
        if wait is not None:
            raise exceptions.Throttled(wait=wait, detail=self.message.format(rate=rate, wait=throttles.wait_text(wait)))
        return True
