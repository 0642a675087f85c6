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
- at the end of the work (the batch's end rule: N examples, M minutes, or whichever comes first) the worker
  gets the assignment's completion code;
- a returned, timed-out or screened-out assignment's link signs nobody in (`LinkRefused("ended")`).
Identity comes only from a signed link: never from a header or a query parameter anyone could write (the open
link of a batch with places, crowd.lifecycle, is the one documented exception, and what limits it is there).
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
from django.utils.translation import gettext_noop

from accounts import services as accounts
from annotation.models import Example
from crowd import quizzes
from crowd.models import Assignment, Quiz, WorkerAccount, WorkerBatch
from dynabench_site import access_cache
from dynabench_site.errors import Conflict, DomainError, InvalidInput
from tasks import guidelines, roles
from tasks.models import Task, TaskMembership

SALT = "crowd.worker-link"
WORKER_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
MAX_ASSIGNMENTS = 2000
User = get_user_model()


class LinkRefused(DomainError):
    """A link that does not sign anyone in; `reason` says why (tampered, expired, used, closed)."""

    STATUS = {"tampered": 400, "expired": 410, "used": 409, "closed": 410, "account": 403, "ended": 410,
              "taken": 409, "full": 409, "participant": 400, "study": 400}
    MESSAGES = {  # marked for translation: the pages show them in the reader's language
        "tampered": gettext_noop("This link is not valid: it was changed or cut short. Open the exact link the "
                                 "study gave you."),
        "expired": gettext_noop("This link has expired. Ask the study's organisers for a new one."),
        "used": gettext_noop("This link has already been used to sign in; each assignment's link works once. If "
                             "you lost your session, contact the study's organisers."),
        "closed": gettext_noop("This batch is closed; its links no longer sign anyone in."),
        "account": gettext_noop("This link cannot sign you in: the account it belongs to is no longer a worker "
                                "account. Contact the study's organisers."),
        "ended": gettext_noop("This assignment has ended (it was returned, timed out or screened out); its link "
                              "no longer signs anyone in. Your examples are kept."),
        "taken": gettext_noop("This participant id already took a place in this study; each participant takes "
                              "one. If you lost your session, contact the study's organisers."),
        "full": gettext_noop("This study has no free places left right now. Return it on the platform; no work "
                             "is owed."),
        "participant": gettext_noop("This link needs your participant id: open it from the study's page on the "
                                    "platform, which adds it to the address."),
        "study": gettext_noop("This link belongs to another study than the one the platform named."),
    }

    def __init__(self, reason: str):
        super().__init__(self.MESSAGES[reason])
        self.reason = reason
        self.code = f"link_{reason}"
        self.status_code = self.STATUS[reason]


# --- the owner's side ----------------------------------------------------------------------------


def parse_rows(text: str, *, allow_empty: bool = False) -> list[tuple[str, str]]:
    """One worker per line: `worker_id` or `worker_id,assignment_id` (a missing assignment id is made); a
    worker id once per batch."""
    rows: list[tuple[str, str]] = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        parts = [p.strip() for p in line.replace("\t", ",").split(",") if p.strip()]
        if not parts:
            continue
        worker, assignment = parts[0], parts[1] if len(parts) > 1 else f"{parts[0]}-{secrets.token_hex(3)}"
        if not WORKER_ID.match(worker) or not WORKER_ID.match(assignment):
            raise InvalidInput(f"line {number}: ids are letters, digits and _ . : - (at most 100)", field="workers")
        rows.append((worker, assignment))
    if not rows and not allow_empty:
        raise InvalidInput("list at least one worker id, one per line (or give the batch places for its open "
                           "link)", field="workers")
    if len(rows) > MAX_ASSIGNMENTS:
        raise InvalidInput(f"at most {MAX_ASSIGNMENTS} workers per batch", field="workers")
    if len({a for _, a in rows}) != len(rows):
        raise InvalidInput("an assignment id appears twice", field="workers")
    if len({w for w, _ in rows}) != len(rows):
        raise InvalidInput("a worker id appears twice: each worker takes one place", field="workers")
    return rows


@transaction.atomic
def create_batch(task: Task, by, *, name: str, source: str, workers: str, hours: int, examples_required: int,
                 completion_url: str = "", end_rule: str = WorkerBatch.EndRule.EXAMPLES,
                 minutes_required: int | None = None, places: int = 0, time_limit_minutes: int | None = None,
                 study_id: str = "", screen_out_url: str = "") -> WorkerBatch:
    """A batch of listed workers' links and/or `places` for its open link (at least one place per listed worker)."""
    if source not in WorkerBatch.Source.values:
        raise InvalidInput(f"is one of: {', '.join(WorkerBatch.Source.values)}", field="source")
    if not 1 <= hours <= 24 * 90:
        raise InvalidInput("must be between 1 hour and 90 days", field="hours")
    check_lifecycle(end_rule=end_rule, minutes_required=minutes_required, time_limit_minutes=time_limit_minutes,
                    places=places, study_id=study_id, completion_url=completion_url, screen_out_url=screen_out_url)
    rows = parse_rows(workers, allow_empty=places > 0)
    batch = WorkerBatch.objects.create(
        task=task, name=name.strip() or "batch", source=source, examples_required=examples_required,
        completion_url=completion_url, expires_at=timezone.now() + timedelta(hours=hours), created_by=by,
        end_rule=end_rule, minutes_required=minutes_required or None, places=max(places, len(rows)),
        time_limit_minutes=time_limit_minutes or None, study_id=study_id.strip(), screen_out_url=screen_out_url,
    )
    Assignment.objects.bulk_create([
        Assignment(batch=batch, worker_id=w, assignment_id=a, completion_code=new_code()) for w, a in rows
    ])
    return batch


def new_code() -> str:
    return secrets.token_hex(5).upper()


MAX_PLACES = 10000
MAX_MINUTES = 24 * 60


def check_lifecycle(*, end_rule: str, minutes_required: int | None, time_limit_minutes: int | None, places: int,
                    study_id: str = "", completion_url: str = "", screen_out_url: str = "") -> None:
    """The batch's end rule, places, time limit, study id and the two addresses workers are sent back to."""
    if end_rule not in WorkerBatch.EndRule.values:
        raise InvalidInput(f"is one of: {', '.join(WorkerBatch.EndRule.values)}", field="end_rule")
    if end_rule != WorkerBatch.EndRule.EXAMPLES and not minutes_required:
        raise InvalidInput("give the minutes of work for this end rule", field="minutes_required")
    if minutes_required is not None and not 0 <= minutes_required <= MAX_MINUTES:
        raise InvalidInput(f"must be between 1 and {MAX_MINUTES} minutes", field="minutes_required")
    if time_limit_minutes is not None and not 0 <= time_limit_minutes <= 24 * 60 * 90:
        raise InvalidInput("must be between 1 minute and 90 days", field="time_limit_minutes")
    if (time_limit_minutes and minutes_required and end_rule != WorkerBatch.EndRule.EXAMPLES
            and time_limit_minutes <= minutes_required):
        raise InvalidInput("must be longer than the minutes of work, or nobody could finish in time",
                           field="time_limit_minutes")
    if not 0 <= places <= MAX_PLACES:
        raise InvalidInput(f"must be between 0 and {MAX_PLACES}", field="places")
    if study_id and not WORKER_ID.match(study_id.strip()):
        raise InvalidInput("letters, digits and _ . : - (at most 100)", field="study_id")
    for field, url in (("completion_url", completion_url), ("screen_out_url", screen_out_url)):
        if url and not url.startswith("https://"):
            raise InvalidInput("must be an https:// address", field=field)


def token(assignment: Assignment) -> str:
    payload = {"a": assignment.pk, "w": assignment.worker_id, "x": assignment.assignment_id,
               "e": int(assignment.batch.expires_at.timestamp())}
    return signing.dumps(payload, salt=SALT, compress=True)


def link_path(assignment: Assignment) -> str:
    return reverse("crowd-link", args=[token(assignment)])


def close(batch: WorkerBatch) -> None:
    WorkerBatch.objects.filter(pk=batch.pk).update(closed=True)


# --- the worker's side ---------------------------------------------------------------------------


def check_batch(batch: WorkerBatch, payload: dict, now: datetime | None = None) -> None:
    """LinkRefused when a link's batch is closed, or the link (its signed expiry `e`) or the batch has expired."""
    now = now or timezone.now()
    if batch.closed:
        raise LinkRefused("closed")
    if now.timestamp() > payload.get("e", 0) or now > batch.expires_at:
        raise LinkRefused("expired")


def read(link_token: str, now: datetime | None = None) -> Assignment:
    """The assignment a link names, or LinkRefused: the signature, the ids and the expiry are all checked."""
    try:
        payload = signing.loads(link_token, salt=SALT)
    except signing.BadSignature:
        raise LinkRefused("tampered") from None
    assignment = Assignment.objects.select_related("batch__task").filter(pk=payload.get("a")).first()
    if assignment is None or (payload.get("w"), payload.get("x")) != (assignment.worker_id, assignment.assignment_id):
        raise LinkRefused("tampered")
    check_batch(assignment.batch, payload, now)
    if assignment.ended:
        raise LinkRefused("ended")
    return assignment


def follow(link_token: str) -> Assignment:
    """Sign-in by link, once per assignment: the worker's account (made on first use) and their writer role."""
    assignment = read(link_token)
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().select_related("batch__task").get(pk=assignment.pk)
        if assignment.ended:
            raise LinkRefused("ended")
        if assignment.followed_at is not None:
            raise LinkRefused("used")
        sign_in_as_worker(assignment)
        assignment.save(update_fields=["user", "followed_at", "state"])
    return assignment


def sign_in_as_worker(assignment: Assignment) -> None:
    """The assignment's worker account (made on first use), its writer role, and the assignment started (not
    saved: the caller saves it in its transaction)."""
    task = assignment.batch.task
    user = worker_account(task, assignment.batch.source, assignment.worker_id)
    if not links_may_sign_in(user):
        raise LinkRefused("account")
    if not task.typed_config.crowd.writers_need_quiz:
        roles.grant_on_task(user, task, roles.ANNOTATOR, TaskMembership.Source.LINK)
    assignment.user, assignment.followed_at, assignment.state = user, timezone.now(), Assignment.State.ACTIVE


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
    required: int  # examples (0 when the batch ends by minutes only)
    minutes_required: int | None = None  # when the batch ends by minutes
    minutes_done: int = 0
    work_ends_at: datetime | None = None  # when the minutes of work are done
    time_limit_at: datetime | None = None  # when an unfinished assignment times out
    ended: str = ""  # the assignment's state when it was returned, timed out or screened out

    @property
    def examples_reached(self) -> bool:
        return self.required > 0 and self.written >= self.required

    @property
    def minutes_reached(self) -> bool:
        return self.minutes_required is not None and self.minutes_done >= self.minutes_required

    @property
    def done(self) -> bool:
        return (not self.ended and self.may_write and self.guidelines_read
                and (self.examples_reached or self.minutes_reached))


def progress(assignment: Assignment, now: datetime | None = None) -> Progress:
    """Where the worker stands against the batch's end rule: N examples, M minutes (from following the link),
    or whichever comes first."""
    now = now or timezone.now()
    batch, task, user = assignment.batch, assignment.batch.task, assignment.user
    needs_quiz = task.typed_config.crowd.writers_need_quiz and not roles.granted(user, task, roles.ANNOTATOR)
    started = assignment.followed_at or now
    written = Example.objects.filter(author=user, round__task=task, retracted=False, created_at__gte=started).count()
    minutes = batch.minutes_required if batch.ends_by_minutes else None
    return Progress(
        guidelines_read=guidelines.pending(user, task) is None,
        quiz=quizzes.quiz_for(task, roles.ANNOTATOR) if needs_quiz else None,
        may_write=roles.has_role(user, roles.ANNOTATOR, task),
        written=written, required=batch.examples_required if batch.ends_by_examples else 0,
        minutes_required=minutes, minutes_done=int((now - started).total_seconds() // 60),
        work_ends_at=started + timedelta(minutes=minutes) if minutes else None,
        time_limit_at=started + timedelta(minutes=batch.time_limit_minutes) if batch.time_limit_minutes else None,
        ended=assignment.state if assignment.ended else "",
    )


def complete(assignment: Assignment, now: datetime | None = None) -> str:
    """The completion code, once the assignment's work is done (Conflict before, or once it has ended: returned,
    timed out, screened out; an unfinished assignment past its time limit times out here)."""
    now = now or timezone.now()
    if time_out_if_due(assignment, now):
        assignment.refresh_from_db()
    if assignment.ended:
        raise Conflict(f"this assignment has ended ({assignment.get_state_display()}): there is no completion "
                       "code for it")
    state = progress(assignment, now)
    if not state.done:
        raise Conflict(not_done_message(state))
    with transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk, completed_at__isnull=True).update(
            completed_at=now, state=Assignment.State.COMPLETED)
    assignment.refresh_from_db()
    return assignment.completion_code


def not_done_message(state: Progress) -> str:
    if not (state.may_write and state.guidelines_read):
        return "not finished yet: read the guidelines and pass the quiz first"
    parts = []
    if state.required:
        parts.append(f"write {max(0, state.required - state.written)} more example(s)")
    if state.minutes_required is not None:
        parts.append(f"work {max(0, state.minutes_required - state.minutes_done)} more minute(s)")
    return "not finished yet: " + " or ".join(parts)


def completion_url(assignment: Assignment) -> str | None:
    """The platform's completion address with the code (Prolific: .../submissions/complete?cc=CODE), for a
    completed assignment only."""
    template = assignment.batch.completion_url
    if not template or assignment.state != Assignment.State.COMPLETED:
        return None
    return template.replace("{code}", assignment.completion_code)


def end(assignment: Assignment, state: str, now: datetime | None = None) -> bool:
    """Mark the assignment returned / timed out / screened out (its place is freed; its examples stay); False
    when it had ended already (the first ending stands)."""
    if state not in Assignment.ENDED:
        raise ValueError(f"not an ending state: {state}")
    changed = Assignment.objects.filter(pk=assignment.pk).exclude(state__in=Assignment.ENDED).update(
        state=state, ended_at=now or timezone.now())
    if changed:
        access_cache.bump()  # the worker's cached standing (crowd.lifecycle.ended_gate) is stale now
    return bool(changed)


def time_out_if_due(assignment: Assignment, now: datetime | None = None) -> bool:
    """Time out this active assignment when its batch's time limit has passed since it started."""
    limit = assignment.batch.time_limit_minutes
    now = now or timezone.now()
    if (not limit or assignment.state != Assignment.State.ACTIVE or assignment.followed_at is None
            or now < assignment.followed_at + timedelta(minutes=limit)):
        return False
    return end(assignment, Assignment.State.TIMED_OUT, now)
