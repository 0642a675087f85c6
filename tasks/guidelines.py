"""A task's guidelines: versioned Markdown, and who acknowledged which version.

The rule: a writer or validator who has not acknowledged the current version may not submit or vote on
the task until they do (`check_acknowledged`, called by annotation's submit and validation's votes).
Owners and admins wrote them and are never asked. A task without guidelines asks nothing.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max
from django.urls import reverse

from dynabench_site import access_cache
from dynabench_site.errors import Conflict, InvalidInput
from dynabench_site.text import check_text
from tasks import gates, roles
from tasks.models import Guidelines, GuidelinesAcknowledgement, Task

MAX_CHARS = 50_000


class GuidelinesNotAcknowledged(Conflict):
    """409 `guidelines`: the answer names the version, the page to read it on (`guidelines_url`), the API address
    that acknowledges it (`acknowledge_url`, POST {"version": n}: the write and validate pages confirm in place, so
    nothing typed is lost) and whether this is the worker's first version (`first_visit`): "changed" only when
    they had acknowledged an earlier one."""

    code = "guidelines"

    def __init__(self, task: Task, version: int, first_visit: bool = True):
        url = reverse("tasks-guidelines", args=[task.slug])
        if first_visit:
            message = (f"Read this task's guidelines (version {version}) and confirm that you have read them before "
                       f"you continue: {url}")
        else:
            message = (f"This task's guidelines changed (now version {version}): read them and confirm that you "
                       f"have read them before you continue: {url}")
        super().__init__(message, extra={
            "guidelines_version": version, "guidelines_url": url, "first_visit": first_visit,
            "acknowledge_url": reverse("api-guidelines-acknowledge", args=[task.slug]),
        })


def current(task: Task) -> Guidelines | None:
    return task.guidelines.order_by("-version").first()


@transaction.atomic
def publish(task: Task, text: str, by=None) -> Guidelines:
    """A new version when the text changed; the current one otherwise."""
    text = (text or "").strip()
    if not text:
        raise InvalidInput("must not be empty", field="text")
    if len(text) > MAX_CHARS:
        raise InvalidInput(f"is {len(text)} characters long; the limit is {MAX_CHARS}", field="text")
    check_text(text, "text")
    Task.objects.select_for_update().filter(pk=task.pk).first()  # one version number at a time
    latest = current(task)
    if latest is not None and latest.text == text:
        return latest
    version = (task.guidelines.aggregate(v=Max("version"))["v"] or 0) + 1
    return Guidelines.objects.create(task=task, version=version, text=text, created_by=by)


def acknowledge(user, task: Task, version: int | None) -> None:
    latest = current(task)
    if latest is None:
        raise Conflict("this task has no guidelines to acknowledge")
    if version != latest.version:
        raise Conflict(f"these are not the current guidelines (version {latest.version}); read the current version "
                       f"first: {reverse('tasks-guidelines', args=[task.slug])}",
                       extra={"guidelines_version": latest.version})
    GuidelinesAcknowledgement.objects.get_or_create(user=user, task=task, version=version)


def exempt(user, task: Task) -> bool:
    return roles.can_manage(user, task)


def pending(user, task: Task) -> Guidelines | None:
    """The current guidelines when `user` must still acknowledge them, else None."""
    latest = current(task)
    if latest is None or not user.is_authenticated or exempt(user, task):
        return None
    done = GuidelinesAcknowledgement.objects.filter(user=user, task=task, version=latest.version).exists()
    return None if done else latest


def check_acknowledged(user, task: Task) -> None:
    """GuidelinesNotAcknowledged (409) when `user` has not acknowledged the current version. From the access cache
    when this user's request found them acknowledged lately (dynabench_site.access_cache: new guidelines, an
    acknowledgement or a change of owners replace the access generation)."""
    gates.check(user, task)  # the steps before the guidelines (tasks.gates: the study's consent, pre-survey, ...)
    name = access_cache.key("guidelines", user.pk, task.pk)
    done, generation = access_cache.lookup(name)
    if done is True:
        return
    latest = pending(user, task)
    if latest is not None:
        earlier = GuidelinesAcknowledgement.objects.filter(user=user, task=task, version__lt=latest.version).exists()
        raise GuidelinesNotAcknowledged(task, latest.version, first_visit=not earlier)
    access_cache.put(name, True, generation)
