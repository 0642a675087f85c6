"""The task a request may see: one rule for every page and API view.

The rule itself is `TaskQuerySet.visible_to`: admins see every task and owners their own, whatever its
state; everyone else sees a task only while it is public and active. A task the user may not see does not
exist for them (404, never 403). What they may do on a task they see is a role (`tasks.roles.has_role`):
pages pass `role` to `task_for`, API views use the permission classes of `tasks.permissions`, which call
the view's `get_task()`.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from dynabench_site import access_cache
from tasks import roles
from tasks.models import Task


def visible_tasks(user):
    """Every task `user` may see (listings, and rows scoped by task)."""
    return Task.objects.visible_to(user)


def visible_task(user, slug: str) -> Task:
    """The task `slug` if `user` may see it, else Http404. From the access cache when a request of this user read it
    lately (dynabench_site.access_cache: any write to a task, its owners or the user's roles makes that stale)."""
    name = access_cache.key("task", user.pk if user.is_authenticated else 0, slug)
    task, generation = access_cache.lookup(name)
    if task is access_cache.MISSING:
        task = visible_tasks(user).filter(slug=slug).first()
        access_cache.put(name, task, generation)
    if task is None:
        raise Http404(f"No task {slug!r}.")
    return task


def open_round(task: Task):
    """`task.current_round` (its open round, or None), from the access cache when a request read it lately: opening
    or closing a round replaces the access generation (tasks.round_state)."""
    name = access_cache.key("open-round", task.pk)
    found, generation = access_cache.lookup(name)
    if found is access_cache.MISSING:
        found = task.current_round
        access_cache.put(name, found, generation)
    return found


def refusal(role: str) -> str:
    """The message of a refused role check (pages and API alike)."""
    return REFUSALS.get(role, f"You need the {role} role for this.")


REFUSALS = {
    roles.ANNOTATOR: "Only annotators may write examples (where a task asks writers for a quiz, pass it on the "
                     "task's page first).",
    roles.VALIDATOR: "Only validators may validate examples: pass the task's validator quiz on its page, or ask "
                     "its owners.",
    roles.EXPERT: "Only experts and task owners may do this.",
    roles.RESEARCHER: "Only researchers, task owners and admins may do this.",
    roles.OWNER: "Only the task's owners and admins may do this.",
    roles.ADMIN: "Only admins may do this.",
}


def task_for(request: HttpRequest, slug: str, role: str | None = None) -> Task:
    """For pages: the task `slug` as this request may see it (404 otherwise), and, when `role` is
    given, only if the user holds that role on it (403 otherwise)."""
    task = visible_task(request.user, slug)
    if role is not None and not roles.has_role(request.user, role, task):
        raise PermissionDenied(refusal(role))
    return task


def step_redirect(request: HttpRequest, task: Task):
    """For work pages (write, validate, chat): a redirect to the first step the person still has to take before
    any work (tasks.gates: the study's consent, pre-survey, ...), or None."""
    from django.shortcuts import redirect

    from tasks import gates

    step = gates.pending(request.user, task)
    if step is None:
        return None
    from django.utils.http import urlencode

    # Back to this page once the steps are taken (the step pages honour a same-site `next`).
    return redirect(f"{step.url}?{urlencode({'next': request.get_full_path()})}")


class TaskScopedMixin:
    """For API views whose URL names a task by `slug`: `get_task()` is that task as the caller may see it
    (404 otherwise), looked up once per request. Role checks are the view's permission classes."""

    request: HttpRequest
    kwargs: dict

    def get_task(self) -> Task:
        if not hasattr(self, "_task"):
            self._task = visible_task(self.request.user, self.kwargs["slug"])
        return self._task
