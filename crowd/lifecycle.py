"""The crowd platform's lifecycle of a batch: places, the open study link, the end of the work, and the ways
out (returned, timed out, screened out). Docs: docs/study/crowd-lifecycle.md.

Places. A batch pays for `places` participants. An assignment holds a place while it is invited (a listed
worker), active or completed; a returned, timed-out or screened-out one frees it, and the next participant may
take it. Its examples are kept; its link signs nobody in again.

The open link (Prolific style). One signed link per batch (`open_link_path`) that the owner pastes into the
platform, which appends the participant's ids (Prolific: PROLIFIC_PID, STUDY_ID, SESSION_ID). Following it
(POST) takes a free place: it makes the Assignment for that worker id and signs in as that worker's account on
the batch's task. This is the one place identity comes from a query parameter, so it is limited:
- the signature proves only that the owner published the link; the participant id is what the visitor says;
- a worker id takes at most one place per batch, once (a second claim is refused: "taken"), and a place is held
  for that worker id only;
- the account is the worker id's account on this task and source (never another task's: WorkerAccount), and
  never an account with a password, staff, or an owner (`links.links_may_sign_in`);
- when the batch names its study id, the STUDY_ID parameter must match;
- the platform reconciles: its webhooks and the polling (crowd.platform) report every submission by participant
  id; a claimed place the platform never reports shows as "not seen by the platform" on the owner's page, and
  a RETURNED / TIMED-OUT there frees the place here.

The end of the work is the batch's end rule (links.progress); the time limit (`time_limit_minutes`) times out
an unfinished assignment (`time_out_due`, run by the `crowd.lifecycle_sweep` job through
`crowd.platform.sweep`, and on finishing).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core import signing
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from crowd import links
from crowd.links import LinkRefused
from crowd.models import Assignment, PlatformEvent, WorkerBatch
from dynabench_site import access_cache
from tasks.gates import Step

log = logging.getLogger(__name__)

OPEN_SALT = "crowd.open-link"
# The query parameters each platform appends to a study link: participant id, study id, submission id.
PARAMETERS = {
    WorkerBatch.Source.PROLIFIC: ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    WorkerBatch.Source.MTURK: ("workerId", "hitId", "assignmentId"),
    WorkerBatch.Source.OTHER: ("worker_id", "study_id", "session_id"),
}
# What the platform's submission statuses change here (statuses as Prolific spells them; case and _/- are
# normalised by `normal_status`). Other statuses (ACTIVE, RESERVED, AWAITING REVIEW, APPROVED, REJECTED) are
# recorded on the assignment and change nothing else.
ENDING_STATUSES = {
    "RETURNED": Assignment.State.RETURNED,
    "TIMED-OUT": Assignment.State.TIMED_OUT,
    "SCREENED OUT": Assignment.State.SCREENED_OUT,
}
# Why a person leaves before the end (study.exits reasons) and what it makes of their assignment.
EXIT_STATES = {"ineligible": Assignment.State.SCREENED_OUT, "declined": Assignment.State.RETURNED,
               "withdrawn": Assignment.State.RETURNED}


def normal_status(status: str) -> str:
    """Prolific's statuses as one spelling: "timed_out", "Timed-Out" -> "TIMED-OUT"; "awaiting_review" ->
    "AWAITING REVIEW"; "screened_out" -> "SCREENED OUT"."""
    text = " ".join(str(status or "").replace("_", " ").upper().split())
    return "TIMED-OUT" if text in ("TIMED OUT", "TIMED-OUT") else text


# --- places --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Places:
    total: int
    taken: int
    by_state: dict[str, int]

    @property
    def free(self) -> int:
        return max(0, self.total - self.taken)


def places(batch: WorkerBatch) -> Places:
    counts = dict(batch.assignments.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    by_state = {state: counts.get(state, 0) for state in Assignment.State.values}
    return Places(batch.places, sum(by_state[s] for s in Assignment.HOLDING), by_state)


# --- the open link -------------------------------------------------------------------------------


def open_token(batch: WorkerBatch) -> str:
    return signing.dumps({"b": batch.pk, "e": int(batch.expires_at.timestamp())}, salt=OPEN_SALT, compress=True)


def open_link_path(batch: WorkerBatch) -> str:
    return reverse("crowd-open-link", args=[open_token(batch)])


def open_link_template(batch: WorkerBatch, absolute_path: str) -> str:
    """The open link with the platform's placeholders, as the owner pastes it (Prolific fills {{%...%}})."""
    worker, study, session = PARAMETERS[batch.source]
    if batch.source == WorkerBatch.Source.PROLIFIC:
        return (f"{absolute_path}?{worker}={{{{%PROLIFIC_PID%}}}}&{study}={{{{%STUDY_ID%}}}}"
                f"&{session}={{{{%SESSION_ID%}}}}")
    return f"{absolute_path}?{worker}=…&{study}=…&{session}=…"


def read_open(token: str, now: datetime | None = None) -> WorkerBatch:
    """The batch an open link names, or LinkRefused (tampered, closed, expired)."""
    try:
        payload = signing.loads(token, salt=OPEN_SALT)
    except signing.BadSignature:
        raise LinkRefused("tampered") from None
    batch = WorkerBatch.objects.select_related("task").filter(pk=payload.get("b")).first()
    if batch is None:
        raise LinkRefused("tampered")
    links.check_batch(batch, payload, now)
    return batch


@dataclass(frozen=True)
class Arrival:
    """The ids the platform appended to the open link."""

    worker_id: str
    study_id: str
    submission_id: str


def arrival(batch: WorkerBatch, params) -> Arrival:
    """The participant's ids from the link's query parameters (LinkRefused "participant" / "study")."""
    worker_key, study_key, session_key = PARAMETERS[batch.source]
    worker = (params.get(worker_key) or "").strip()
    study = (params.get(study_key) or "").strip()
    session = (params.get(session_key) or "").strip()
    if not links.WORKER_ID.match(worker) or (session and not links.WORKER_ID.match(session)):
        raise LinkRefused("participant")
    if batch.study_id and study != batch.study_id:
        raise LinkRefused("study")
    return Arrival(worker, study, session)


def claim(token: str, params) -> Assignment:
    """Take a free place of the open link's batch for the participant id in `params`: the Assignment (active,
    signed in as that worker's account on the task). Refused when the id already took a place here ("taken",
    whatever became of it), when no place is free ("full"), or as `read_open` / `arrival` refuse."""
    batch = read_open(token)
    who = arrival(batch, params)
    with transaction.atomic():
        batch = WorkerBatch.objects.select_for_update().select_related("task").get(pk=batch.pk)  # one claim at a time
        if batch.assignments.filter(worker_id=who.worker_id).exists():
            raise LinkRefused("taken")
        if places(batch).free <= 0:
            raise LinkRefused("full")
        assignment = Assignment(batch=batch, worker_id=who.worker_id, via_open_link=True,
                                assignment_id=who.submission_id or f"open-{secrets.token_hex(6)}",
                                submission_id=who.submission_id, completion_code=links.new_code())
        links.sign_in_as_worker(assignment)
        try:
            with transaction.atomic():
                assignment.save()
        except IntegrityError:  # the submission id is another assignment's id in this batch
            raise LinkRefused("taken") from None
    return assignment


# --- the ways out ---------------------------------------------------------------------------------


end = links.end  # returned / timed out / screened out: the place is freed (crowd.links)
time_out_if_due = links.time_out_if_due


def time_out_due(now: datetime | None = None) -> int:
    """Every active assignment past its batch's time limit: timed out (the sweep); how many."""
    now = now or timezone.now()
    running = (Assignment.objects.filter(state=Assignment.State.ACTIVE, batch__time_limit_minutes__isnull=False,
                                         followed_at__isnull=False)
               .values_list("pk", "followed_at", "batch__time_limit_minutes"))
    due = [pk for pk, started, limit in running.iterator() if now >= started + timedelta(minutes=limit)]
    ended = (Assignment.objects.filter(pk__in=due, state=Assignment.State.ACTIVE)
             .update(state=Assignment.State.TIMED_OUT, ended_at=now))
    if ended:
        access_cache.bump()  # their cached standing (ended_gate) is stale now
    return ended


def ended_gate(user, task) -> Step | None:
    """tasks.gates: a worker who came by a link and whose every assignment on `task` has ended (returned, timed out,
    screened out: the place went to someone else) does no more work there, though still signed in; their page says
    why. Only link accounts (no password) are asked; cached under the access generation (an ending bumps it)."""
    if not getattr(user, "is_authenticated", False) or user.has_usable_password():
        return None
    name = access_cache.key("crowd-ended", user.pk, task.pk)
    ended_pk, generation = access_cache.lookup(name)
    if ended_pk is access_cache.MISSING:
        states = list(Assignment.objects.filter(user=user, batch__task=task).order_by("-pk")
                      .values_list("pk", "state"))
        ended_pk = states[0][0] if states and all(state in Assignment.ENDED for _, state in states) else 0
        access_cache.put(name, ended_pk, generation)
    if not ended_pk:
        return None
    return Step("assignment_ended", str(_("Your assignment on this task has ended (returned or timed out), and its "
                                          "place went to someone else: there is no more work for you here.")),
                reverse("crowd-assignment", args=[ended_pk]))


def open_assignment(user, task) -> Assignment | None:
    """The person's assignment on `task` that is still under way (invited or active), if they came by a link."""
    if not getattr(user, "is_authenticated", False):
        return None
    return (Assignment.objects.select_related("batch").filter(user=user, batch__task=task)
            .filter(state=Assignment.State.ACTIVE).order_by("-followed_at").first())


def exit_url(user, task, reason: str) -> str | None:
    """study.exits provider: for a link worker whose assignment is under way, the page that sends them back to
    the platform without a completion code (crowd-assignment-leave); None otherwise (and for "finished": the
    completion path is `links.complete`). Reads only."""
    if reason not in EXIT_STATES:
        return None
    assignment = open_assignment(user, task)
    if assignment is None:
        return None
    return f"{reverse('crowd-assignment-leave', args=[assignment.pk])}?reason={reason}"


def leave(assignment: Assignment, reason: str, now: datetime | None = None) -> str | None:
    """The person leaves before the end (ineligible, declined, withdrawn): the assignment screened out or
    returned (its place freed, no completion code), and the batch's screen-out address, if any."""
    if reason not in EXIT_STATES:
        from dynabench_site.errors import InvalidInput

        raise InvalidInput(f"is one of: {', '.join(EXIT_STATES)}", field="reason")
    if assignment.state == Assignment.State.COMPLETED:
        from dynabench_site.errors import Conflict

        raise Conflict("this assignment is completed: its completion code stands")
    end(assignment, EXIT_STATES[reason], now)
    return assignment.batch.screen_out_url or None


# --- the platform's events -------------------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    processed: bool  # False: the event id was seen before
    outcome: str


def submission_event_id(submission_id: str, participant_id: str, status: str) -> str:
    """The id of a submission's change of status when the platform gives none (Prolific's payload has no event
    id): a submission reaches a status once, so (submission, status) names the change, and a webhook and the
    polling that both see it record it once."""
    return f"submission.status.change:{submission_id or participant_id}:{normal_status(status)}"


def apply_submission_status(batch: WorkerBatch, *, participant_id: str, submission_id: str, status: str,
                            channel: str, event_id: str | None = None,
                            event_type: str = "submission.status.change",
                            now: datetime | None = None) -> Applied:
    """A submission's new status, once per event id: recorded on the participant's assignment; RETURNED,
    TIMED-OUT and SCREENED OUT end it (the place is freed). Idempotent: a repeated event id changes nothing."""
    status = normal_status(status)
    event_id = event_id or submission_event_id(submission_id, participant_id, status)
    with transaction.atomic():
        try:
            with transaction.atomic():
                event = PlatformEvent.objects.create(
                    batch=batch, event_id=event_id[:200], event_type=event_type[:60], channel=channel,
                    participant_id=participant_id[:100], submission_id=submission_id[:100], status=status[:40])
        except IntegrityError:
            return Applied(False, "already processed")
        outcome = _apply(batch, participant_id, submission_id, status, now)
        PlatformEvent.objects.filter(pk=event.pk).update(outcome=outcome[:200])
    return Applied(True, outcome)


def _apply(batch: WorkerBatch, participant_id: str, submission_id: str, status: str, now) -> str:
    found = Assignment.objects.select_for_update().filter(batch=batch)
    assignment = (found.filter(worker_id=participant_id).first() if participant_id else None) or \
        (found.filter(submission_id=submission_id).first() if submission_id else None)
    if assignment is None:
        return "no assignment for this participant here"
    updates = {"platform_status": status}
    if submission_id and not assignment.submission_id:
        updates["submission_id"] = submission_id
    Assignment.objects.filter(pk=assignment.pk).update(**updates)
    ending = ENDING_STATUSES.get(status)
    if ending is None:
        return f"recorded ({status.lower()})"
    if end(assignment, ending, now):
        return f"{Assignment.State(ending).label}: place freed"
    return f"already {assignment.get_state_display()}"


# --- the owner's settings -----------------------------------------------------------------------------

MIN_SECRET = 16


def configure(batch: WorkerBatch, *, places: int, time_limit_minutes: int | None, study_id: str,
              completion_url: str, screen_out_url: str, webhook_secret: str = "", new_secret: bool = False) -> None:
    """The batch's platform settings after creation. Fewer places than are taken frees nobody's place: the open
    link stops taking new participants until enough places are free."""
    from crowd.models import new_webhook_secret
    from dynabench_site.errors import InvalidInput

    links.check_lifecycle(end_rule=batch.end_rule, minutes_required=batch.minutes_required,
                          time_limit_minutes=time_limit_minutes, places=places, study_id=study_id,
                          completion_url=completion_url, screen_out_url=screen_out_url)
    secret = webhook_secret.strip()
    if secret and (len(secret) < MIN_SECRET or not secret.isprintable()):
        raise InvalidInput(f"a secret is at least {MIN_SECRET} printable characters", field="webhook_secret")
    batch.places, batch.time_limit_minutes = places, time_limit_minutes or None
    batch.study_id, batch.completion_url, batch.screen_out_url = study_id.strip(), completion_url, screen_out_url
    if new_secret:
        batch.webhook_secret = new_webhook_secret()
    elif secret:
        batch.webhook_secret = secret
    batch.save(update_fields=["places", "time_limit_minutes", "study_id", "completion_url", "screen_out_url",
                              "webhook_secret"])
