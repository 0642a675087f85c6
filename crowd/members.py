"""The owner's hand on the crowd of a task: appointing writers, validators and experts, suspending an
account, and seeing who is linked to whom.

Suspending an account from a task takes every role there away (`tasks.roles.has_role` checks it) and
withdraws its crowd votes on the task: what those votes decided is decided again without them
(`validation.services.withdraw_votes`), so a sock-puppet's verifications do not outlive it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from accounts.models import Account
from annotation.models import Example
from dynabench_site import access_cache
from dynabench_site.errors import Conflict, InvalidInput, NotFound
from dynabench_site.text import check_text, quote
from tasks import roles
from tasks.models import Suspension, Task, TaskMembership
from validation import services as votes
from validation.models import Validation

User = get_user_model()


def find_user(username: str):
    user = User.objects.filter(username=(username or "").strip()).first()
    if user is None:
        raise NotFound(f"no account is called {quote(username)}")
    return user


def appoint(task: Task, username: str, role: str, by) -> TaskMembership:
    """An owner gives `role` on the task to an account (experts are appointed this way)."""
    if role not in roles.TASK_ROLES:
        raise InvalidInput(f"is one of: {', '.join(roles.TASK_ROLES)}", field="role")
    user = find_user(username)
    if roles.is_suspended(user, task):
        raise Conflict(f"{user.username} is suspended from this task; lift the suspension first")
    return roles.grant_on_task(user, task, role, TaskMembership.Source.OWNER, by=by)


def revoke(task: Task, username: str, role: str) -> None:
    if not roles.revoke_on_task(find_user(username), task, role):
        raise NotFound(f"{username} holds no {role} role on this task")


def suspend(task: Task, username: str, by, reason: str) -> int:
    """Suspend an account from the task and withdraw its votes there; returns the examples re-decided."""
    user = find_user(username)
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("say why (the account's owner may ask)", field="reason")
    check_text(reason, "reason")
    if roles.can_manage(user, task):
        raise Conflict("an owner or admin of the task cannot be suspended from it")
    try:
        with transaction.atomic():
            Suspension.objects.create(task=task, user=user, reason=reason[:500], suspended_by=by)
    except IntegrityError:
        raise Conflict(f"{user.username} is already suspended from this task") from None
    roles.forget(user)
    return votes.withdraw_votes(task, user, votes.SUSPENDED)


def lift(task: Task, username: str) -> None:
    """Lift the suspension; withdrawn votes stay withdrawn (the account votes again from now on)."""
    user = find_user(username)
    if not Suspension.objects.filter(task=task, user=user, lifted_at__isnull=True).update(lifted_at=timezone.now()):
        raise NotFound(f"{user.username} is not suspended from this task")
    access_cache.bump()  # a queryset update sends no signal
    roles.forget(user)


# --- who works on the task -----------------------------------------------------------------------


@dataclass
class Person:
    user_id: int
    username: str
    examples: int = 0
    votes: int = 0
    excluded_votes: int = 0
    origin: str = ""
    roles: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)  # usernames sharing a sign-up address or worker id
    suspended: bool = False


def people(task: Task, limit: int = 500) -> list[Person]:
    """Everyone who wrote or validated on the task, or holds a role on it, with their links (sybil
    clusters): the owner sees usernames only, never addresses."""
    found: dict[int, Person] = {}

    def person(user_id: int, username: str) -> Person:
        return found.setdefault(user_id, Person(user_id, username))

    for row in Example.objects.filter(round__task=task).values("author", "author__username").annotate(n=Count("pk")):
        person(row["author"], row["author__username"]).examples = row["n"]
    crowd = Validation.objects.filter(example__round__task=task, mode=Validation.Mode.CROWD)
    for row in crowd.values("validator", "validator__username").annotate(
            n=Count("pk", filter=Q(counted=True)), x=Count("pk", filter=Q(counted=False))):
        p = person(row["validator"], row["validator__username"])
        p.votes, p.excluded_votes = row["n"], row["x"]
    for m in TaskMembership.objects.filter(task=task).select_related("user"):
        person(m.user_id, m.user.username).roles.append(f"{m.role} ({m.get_source_display().lower()})")
    suspended = set(Suspension.objects.filter(task=task, lifted_at__isnull=True).values_list("user", flat=True))
    for p in found.values():
        p.suspended = p.user_id in suspended
    _add_links(found)
    return sorted(found.values(), key=lambda p: (not p.linked, -p.examples - p.votes, p.username))[:limit]


def _add_links(found: dict) -> None:
    accounts = Account.objects.filter(user__in=list(found)).values_list(
        "user", "origin", "signup_ip", "external_worker_id")
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for user_id, origin, ip, worker in accounts:
        found[user_id].origin = origin
        if ip:
            groups[("ip", ip)].append(user_id)
        if worker:
            groups[("worker", worker)].append(user_id)
    for members in groups.values():
        for user_id in members:
            found[user_id].linked += [found[o].username for o in members if o != user_id]
    for p in found.values():
        p.linked = sorted(set(p.linked))
