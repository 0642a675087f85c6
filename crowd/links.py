"""External worker links (Prolific / Mechanical Turk style).

An owner creates a batch from a list of worker ids (and assignment ids); each assignment gets a link that
carries its worker id and assignment id, signed with the site's secret (`django.core.signing`) and valid
until the batch expires. The rules:
- a link whose text was changed (or cut short) is refused, and so is an expired one or one of a closed
  batch: each with a page that says which;
- following a link signs the worker in, without a password, as the account of that worker id *on the batch's
  task* (made on first use), a writer on that task unless the task asks writers for a quiz; once per
  assignment: a link already used is refused;
- the account is scoped by task (`WorkerAccount`: task, source, worker id): worker ids are public (usernames
  such as `prolific-<id>`), so an owner who lists another task's worker id in a batch of their own gets a
  fresh account, never that worker's; the same worker recruited for two tasks has two accounts (linked, for
  the sybil rules, by their worker id); on two batches of one task, one;
- a link never signs into an account that is anything but a worker account: staff, a task owner, one with a
  password, or a deactivated one is refused (`LinkRefused("account")`);
- at the end (the batch's number of examples written) the worker gets the assignment's completion code.
Identity comes only from a signed link: never from a header or a query parameter anyone could write.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from accounts import services as accounts
from annotation.models import Example
from crowd import quizzes
from crowd.models import Assignment, Quiz, WorkerAccount, WorkerBatch
from dynabench_site.errors import Conflict, DomainError, InvalidInput
from tasks import guidelines, roles
from tasks.models import Task, TaskMembership

SALT = "crowd.worker-link"
WORKER_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
MAX_ASSIGNMENTS = 2000
User = get_user_model()


class LinkRefused(DomainError):
    """A link that does not sign anyone in; `reason` says why (tampered, expired, used, closed)."""

    STATUS = {"tampered": 400, "expired": 410, "used": 409, "closed": 410, "account": 403}
    MESSAGES = {
        "tampered": "This link is not valid: it was changed or cut short. Open the exact link the study gave you.",
        "expired": "This link has expired. Ask the study's organisers for a new one.",
        "used": "This link has already been used to sign in; each assignment's link works once. If you lost your "
                "session, contact the study's organisers.",
        "closed": "This batch is closed; its links no longer sign anyone in.",
        "account": "This link cannot sign you in: the account it belongs to is no longer a worker account. "
                   "Contact the study's organisers.",
    }

    def __init__(self, reason: str):
        super().__init__(self.MESSAGES[reason])
        self.reason = reason
        self.code = f"link_{reason}"
        self.status_code = self.STATUS[reason]


# --- the owner's side ----------------------------------------------------------------------------


def parse_rows(text: str) -> list[tuple[str, str]]:
    """One worker per line: `worker_id` or `worker_id,assignment_id` (a missing assignment id is made)."""
    rows: list[tuple[str, str]] = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        parts = [p.strip() for p in line.replace("\t", ",").split(",") if p.strip()]
        if not parts:
            continue
        worker, assignment = parts[0], parts[1] if len(parts) > 1 else f"{parts[0]}-{secrets.token_hex(3)}"
        if not WORKER_ID.match(worker) or not WORKER_ID.match(assignment):
            raise InvalidInput(f"line {number}: ids are letters, digits and _ . : - (at most 100)", field="workers")
        rows.append((worker, assignment))
    if not rows:
        raise InvalidInput("list at least one worker id, one per line", field="workers")
    if len(rows) > MAX_ASSIGNMENTS:
        raise InvalidInput(f"at most {MAX_ASSIGNMENTS} workers per batch", field="workers")
    if len({a for _, a in rows}) != len(rows):
        raise InvalidInput("an assignment id appears twice", field="workers")
    return rows


@transaction.atomic
def create_batch(task: Task, by, *, name: str, source: str, workers: str, hours: int, examples_required: int,
                 completion_url: str = "") -> WorkerBatch:
    if source not in WorkerBatch.Source.values:
        raise InvalidInput(f"is one of: {', '.join(WorkerBatch.Source.values)}", field="source")
    if not 1 <= hours <= 24 * 90:
        raise InvalidInput("must be between 1 hour and 90 days", field="hours")
    if completion_url and not completion_url.startswith("https://"):
        raise InvalidInput("must be an https:// address", field="completion_url")
    rows = parse_rows(workers)
    batch = WorkerBatch.objects.create(
        task=task, name=name.strip() or "batch", source=source, examples_required=examples_required,
        completion_url=completion_url, expires_at=timezone.now() + timedelta(hours=hours), created_by=by,
    )
    Assignment.objects.bulk_create([
        Assignment(batch=batch, worker_id=w, assignment_id=a, completion_code=secrets.token_hex(5).upper())
        for w, a in rows
    ])
    return batch


def token(assignment: Assignment) -> str:
    payload = {"a": assignment.pk, "w": assignment.worker_id, "x": assignment.assignment_id,
               "e": int(assignment.batch.expires_at.timestamp())}
    return signing.dumps(payload, salt=SALT, compress=True)


def link_path(assignment: Assignment) -> str:
    return reverse("crowd-link", args=[token(assignment)])


def close(batch: WorkerBatch) -> None:
    WorkerBatch.objects.filter(pk=batch.pk).update(closed=True)


# --- the worker's side ---------------------------------------------------------------------------


def read(link_token: str, now: datetime | None = None) -> Assignment:
    """The assignment a link names, or LinkRefused: the signature, the ids and the expiry are all checked."""
    try:
        payload = signing.loads(link_token, salt=SALT)
    except signing.BadSignature:
        raise LinkRefused("tampered") from None
    assignment = Assignment.objects.select_related("batch__task").filter(pk=payload.get("a")).first()
    if assignment is None or (payload.get("w"), payload.get("x")) != (assignment.worker_id, assignment.assignment_id):
        raise LinkRefused("tampered")
    now = now or timezone.now()
    if assignment.batch.closed:
        raise LinkRefused("closed")
    if now.timestamp() > payload.get("e", 0) or now > assignment.batch.expires_at:
        raise LinkRefused("expired")
    return assignment


def follow(link_token: str) -> Assignment:
    """Sign-in by link, once per assignment: the worker's account (made on first use) and their writer role."""
    assignment = read(link_token)
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().select_related("batch__task").get(pk=assignment.pk)
        if assignment.followed_at is not None:
            raise LinkRefused("used")
        task = assignment.batch.task
        user = worker_account(task, assignment.batch.source, assignment.worker_id)
        if not links_may_sign_in(user):
            raise LinkRefused("account")
        if not task.typed_config.crowd.writers_need_quiz:
            roles.grant_on_task(user, task, roles.ANNOTATOR, TaskMembership.Source.LINK)
        assignment.user, assignment.followed_at = user, timezone.now()
        assignment.save(update_fields=["user", "followed_at"])
    return assignment


def worker_account(task: Task, source: str, worker_id: str):
    """The account of an external worker id on `task` (one per task, source and worker id), made without a
    password on first use. Never looked up by worker id alone: see the module's docstring."""
    existing = WorkerAccount.objects.select_related("user").filter(task=task, source=source, worker_id=worker_id).first()
    if existing is not None:
        return existing.user
    base = re.sub(r"[^\w.@+-]", "-", f"{source}-{worker_id}")[:140]
    username = base
    while User.objects.filter(username=username).exists():
        username = f"{base}-{secrets.token_hex(2)}"
    try:
        with transaction.atomic():
            user = User(username=username)
            user.set_unusable_password()
            user.save()
            accounts.record_external(user, source, worker_id)
            WorkerAccount.objects.create(task=task, source=source, worker_id=worker_id, user=user)
    except IntegrityError:  # the same worker's other link on this task won the race (or the username did)
        won = WorkerAccount.objects.select_related("user").filter(task=task, source=source, worker_id=worker_id).first()
        if won is None:
            raise
        return won.user
    return user


def links_may_sign_in(user) -> bool:
    """Only a plain worker account: active, no password, not staff, owning no task. Anything else (an
    account an admin promoted or gave a password to) is signed into with its password, never by a link."""
    return (user.is_active and not user.has_usable_password() and not (user.is_staff or user.is_superuser)
            and not user.owned_tasks.exists())


@dataclass(frozen=True)
class Progress:
    guidelines_read: bool
    quiz: Quiz | None  # the writer quiz the worker must still pass, if any
    may_write: bool
    written: int
    required: int

    @property
    def done(self) -> bool:
        return self.may_write and self.guidelines_read and self.written >= self.required


def progress(assignment: Assignment) -> Progress:
    task, user = assignment.batch.task, assignment.user
    needs_quiz = task.typed_config.crowd.writers_need_quiz and not roles.granted(user, task, roles.ANNOTATOR)
    written = Example.objects.filter(author=user, round__task=task, retracted=False,
                                     created_at__gte=assignment.followed_at).count()
    return Progress(
        guidelines_read=guidelines.pending(user, task) is None,
        quiz=quizzes.quiz_for(task, roles.ANNOTATOR) if needs_quiz else None,
        may_write=roles.has_role(user, roles.ANNOTATOR, task),
        written=written, required=assignment.batch.examples_required,
    )


def complete(assignment: Assignment) -> str:
    """The completion code, once the assignment's work is done (Conflict before)."""
    state = progress(assignment)
    if not state.done:
        left = max(0, state.required - state.written)
        raise Conflict(f"not finished yet: write {left} more example(s)" if left else
                       "not finished yet: read the guidelines and pass the quiz first")
    Assignment.objects.filter(pk=assignment.pk, completed_at__isnull=True).update(completed_at=timezone.now())
    assignment.refresh_from_db()
    return assignment.completion_code


def completion_url(assignment: Assignment) -> str | None:
    template = assignment.batch.completion_url
    return template.replace("{code}", assignment.completion_code) if template else None
