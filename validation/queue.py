"""The validation queue: which example a validator gets next, and why there is none.

The rules, in one place:
- never the validator's own example, never one written by an account linked to theirs (the same sign-up
  address or external worker id: the sybil rule, `linked_authors`), never one they already validated,
  never a retracted one;
- a validator whose accuracy on gold items fell below the task's threshold gets nothing (`gold`);
- now and then (the task's `gold_rate`) a crowd validator is served a gold item instead, unannounced;
- only examples in the task's scope (fooling examples, or all scored ones) whose consensus is open;
- order: fooled first, then fewest crowd votes so far, then oldest;
- a claim leases the example to the validator for `lease_seconds`; an example is leased to no more
  validators than the votes it still needs, so two people are never shown an item that needs one vote;
- claiming locks the queue row with SELECT ... FOR UPDATE SKIP LOCKED (PostgreSQL), so concurrent
  claimers pass each other instead of waiting.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Count,
    Exists,
    F,
    Func,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.services import linked_user_ids
from annotation import feedback
from annotation.models import Example
from tasks import roles
from tasks.kinds.base import ValidationSettings
from tasks.models import Round, Task
from validation import consensus, gold
from validation.models import GoldAnswer, GoldItem, Lease, QueueItem, Validation

BATCH = 10
MAX_PASSES = 4

NOTHING_WRITTEN = "nothing_written"
ROUND_CLOSED = "round_closed"
ALL_VALIDATED = "all_validated"
ONLY_OWN = "only_own"
ALREADY_VOTED = "already_voted"
ALL_LEASED = "all_leased"
LOW_ACCURACY = "low_accuracy"

REASONS = {
    NOTHING_WRITTEN: "Nothing to validate has been written yet (or it is still being scored).",
    ROUND_CLOSED: "The round is closed, and this task does not validate examples of closed rounds.",
    ALL_VALIDATED: "Everything has been validated. Thank you!",
    ONLY_OWN: "Only your own examples (or those of accounts linked to yours) are left, and nobody validates those.",
    ALREADY_VOTED: "You have validated every example that is left; the rest need votes from other validators.",
    ALL_LEASED: "Every example left is being validated by someone else right now; try again in a minute.",
    LOW_ACCURACY: "Your answers on this task's check items fell below its accuracy threshold, so it sends you no "
                  "more items and your votes no longer count. The task's owners can see this.",
}


@dataclass(frozen=True)
class Claim:
    example: Example | None
    expires_at: datetime | None = None
    reason: str | None = None

    @property
    def detail(self) -> str | None:
        return REASONS.get(self.reason) if self.reason else None


def claim_next(task: Task, user, now: datetime | None = None) -> Claim:
    """Lease the next example to `user`, or say why there is none."""
    now = now or timezone.now()
    rule = task.typed_config.validation
    crowd = is_crowd(task, user)
    if crowd and gold.is_blocked(task, user):
        return Claim(None, reason=LOW_ACCURACY)
    refresh_unscored_now_and_then(task)
    held = current_lease(task, user, rule, now)
    if held is not None:
        return held
    tried: set[int] = set()
    for attempt in range(MAX_PASSES):
        found = candidates(task, user, rule, now, exclude=tried)
        if not found:
            break
        # Gold only while real items wait, so an otherwise empty queue never hands out gold alone.
        if attempt == 0 and crowd and random.random() < task.typed_config.crowd.gold_rate:
            served = claim_gold(task, user, rule, now)
            if served is not None:
                return served
        for example_id in found:
            claim = try_claim(example_id, user, rule, now)
            if claim is not None:
                return claim
        tried.update(found)
    return Claim(None, reason=empty_reason(task, user, rule))


def scope_filter(rule: ValidationSettings) -> Q:
    return Q(fooled=True) if rule.scope == "fooling" else Q(fooled__isnull=False)


def outlook(examples: list[Example]) -> dict[int, tuple[str, int]]:
    """What the queue will do with each of these examples, for their writer ("My examples", provided to
    `annotation.feedback`), by the queue's own filters (`scope_filter`, `open_items`), never a copy of them:
    (state, crowd votes so far), the state one of `annotation.feedback`'s WAITING (open_items offers it),
    OUT_OF_SCOPE (the task's scope leaves it out), ROUND_CLOSED (in scope and open, but its round closed and the
    task validates open rounds only) or CLOSED (its row is closed: decided or retracted). An example without a
    queue row is left out. One query per task among the examples (`round__task` selected with them)."""
    by_task: dict[int, tuple[Task, list[int]]] = {}
    for example in examples:
        by_task.setdefault(example.round.task_id, (example.round.task, []))[1].append(example.pk)
    found: dict[int, tuple[str, int]] = {}
    for task, ids in by_task.values():
        rule = task.typed_config.validation
        rows = QueueItem.objects.filter(example_id__in=ids).annotate(
            in_scope=Case(When(scope_filter(rule), then=Value(True)), default=Value(False), output_field=BooleanField()),
            offered=Exists(open_items(task, rule).filter(pk=OuterRef("pk"))),
        ).values_list("example_id", "open", "in_scope", "offered", "votes")
        for example_id, is_open, in_scope, offered, votes in rows:
            if offered:
                state = feedback.WAITING
            elif not is_open:
                state = feedback.CLOSED
            elif not in_scope:
                state = feedback.OUT_OF_SCOPE
            else:
                state = feedback.ROUND_CLOSED
            found[example_id] = (state, votes)
    return found


def is_crowd(task: Task, user) -> bool:
    """A crowd validator (experts' and owners' votes override instead; they are never served gold)."""
    return not roles.has_role(user, roles.EXPERT, task)


def linked_authors(task: Task, user) -> QuerySet:
    """Accounts whose examples `user` never validates: those sharing their external worker id, and their
    sign-up address unless the task turned that comparison off."""
    return linked_user_ids(user, by_ip=task.typed_config.crowd.same_ip_rule)


def open_items(task: Task, rule: ValidationSettings, for_user=None) -> QuerySet[QueueItem]:
    """Queue rows open for votes; with `for_user`, only those that user may be offered (not their own,
    not written by an account linked to theirs)."""
    items = QueueItem.objects.filter(Q(task=task, open=True) & scope_filter(rule))
    if not rule.continue_after_close:
        items = items.filter(round__status=Round.Status.OPEN)
    if for_user is not None:
        items = items.exclude(example__author=for_user).exclude(example__author__in=linked_authors(task, for_user))
    return items


def held_by_others(user, now: datetime) -> Subquery:
    leases = (
        Lease.objects.filter(example=OuterRef("example"), expires_at__gt=now)
        .exclude(validator=user)
        .order_by()
        .values("example")
        .annotate(n=Count("id"))
        .values("n")
    )
    return Coalesce(Subquery(leases), Value(0))


def candidates(task: Task, user, rule: ValidationSettings, now: datetime, exclude: set[int]) -> list[int]:
    """The ids of up to BATCH examples in queue order; stale queue rows met on the way are repaired.

    Only the columns the staleness check needs are read: the first candidate is almost always claimed, and
    `try_claim` reads that one example whole with its locked queue row, instead of ten examples with their
    contexts, rounds and tasks here (with the vote's changes, ≈ 8 % less CPU per validator request:
    docs/benchmarks/load.md, run P)."""
    rows = list(
        open_items(task, rule, for_user=user)
        .exclude(Exists(Validation.objects.filter(example=OuterRef("example"), validator=user)))
        .exclude(example__in=exclude)
        .annotate(held=held_by_others(user, now))
        .filter(held__lt=F("needed"))
        .order_by(F("fooled").desc(), "votes", "example")
        .values_list("example_id", "example__retracted", "example__consensus")[:BATCH]
    )
    stale = [pk for pk, retracted, state in rows if retracted or state != Example.Consensus.UNVALIDATED]
    if stale:
        sync_examples(stale)
    return [pk for pk, _, _ in rows if pk not in stale]


def try_claim(example_id: int, user, rule: ValidationSettings, now: datetime) -> Claim | None:
    """Lease one example under its queue row's lock; None when someone holds the lock or it filled up meanwhile."""
    with transaction.atomic():
        # the others' live leases and the example the page shows come with the locked row (one round trip; the
        # lock, on the queue row alone, keeps the leases from changing through another claim of this row meanwhile)
        locked = (QueueItem.objects.select_for_update(skip_locked=True, of=("self",)).filter(pk=example_id, open=True)
                  .annotate(others=held_by_others(user, now)).select_related("example__context", "example__round__task"))
        item = relaxed_commit(locked).first()
        if item is None:
            return None
        votes, voters = votes_and_voters(example_id)
        if user.pk in voters or not has_room(item, user, rule, now, votes, others=item.others):
            return None
        expires = now + timedelta(seconds=rule.lease_seconds)
        Lease.objects.bulk_create(
            [Lease(example_id=example_id, validator=user, expires_at=expires)],
            update_conflicts=True, unique_fields=["example", "validator"], update_fields=["expires_at"],
        )
        return Claim(item.example, expires)


def claim_gold(task: Task, user, rule: ValidationSettings, now: datetime) -> Claim | None:
    """Lease a gold item `user` has not answered (nor validated before it became gold), if any."""
    example = next_gold(task, user)
    if example is None:
        return None
    expires = now + timedelta(seconds=rule.lease_seconds)
    Lease.objects.bulk_create(
        [Lease(example_id=example.pk, validator=user, expires_at=expires)],
        update_conflicts=True, unique_fields=["example", "validator"], update_fields=["expires_at"],
    )
    return Claim(example, expires)


def unanswered_gold(task: Task, user) -> QuerySet[GoldItem]:
    return (
        GoldItem.objects.filter(task=task, active=True, example__retracted=False)
        .exclude(example__author=user)
        .exclude(example__author__in=linked_authors(task, user))
        .exclude(Exists(GoldAnswer.objects.filter(gold=OuterRef("pk"), validator=user)))
        .exclude(Exists(Validation.objects.filter(example=OuterRef("example"), validator=user)))
    )


def next_gold(task: Task, user) -> Example | None:
    item = unanswered_gold(task, user).select_related("example__context", "example__round__task").order_by("?").first()
    return item.example if item is not None else None


def relaxed_commit(rows: QuerySet) -> QuerySet:
    """`rows`, read so that the transaction commits without waiting for the disk (PostgreSQL: `SET LOCAL
    synchronous_commit TO OFF`, as `set_config(..., true)` in the same statement: no round trip of its own). A
    lease is ephemeral (a crash only frees the item early); nothing else is written in that transaction."""
    if connection.vendor != "postgresql":
        return rows
    return rows.annotate(relaxed=Func(Value("synchronous_commit"), Value("off"), Value(True), function="set_config",
                                      output_field=CharField()))


def has_room(
    item: QueueItem, user, rule: ValidationSettings, now: datetime, votes: list[consensus.Vote] | None = None,
    others: int | None = None,
) -> bool:
    """Whether fewer validators than the votes still needed hold a lease on the item (checked under its lock).

    The votes still needed are recomputed from the votes, so a changed task setting takes effect at once.
    """
    needed = consensus.decide(votes_of(item.pk) if votes is None else votes, rule, None).needed
    if others is None:
        others = Lease.objects.filter(example_id=item.pk, expires_at__gt=now).exclude(validator=user).count()
    return others < needed


def current_lease(task: Task, user, rule: ValidationSettings, now: datetime) -> Claim | None:
    """The item `user` already holds (a reload shows the same item instead of taking another)."""
    held = Lease.objects.filter(validator=user, expires_at__gt=now, example__round__task=task)
    for lease in held.order_by("created_at"):  # usually none: a vote releases the lease
        example = Example.objects.select_related("round__task", "context").get(pk=lease.example_id)
        item = open_items(task, rule, for_user=user).filter(pk=example.pk).exists()
        item = item or unanswered_gold(task, user).filter(example=example).exists()
        voted = Validation.objects.filter(example=example, validator=user).exists()
        if item and not voted and not example.retracted:
            lease.expires_at = now + timedelta(seconds=rule.lease_seconds)
            lease.save(update_fields=["expires_at"])
            return Claim(example, lease.expires_at)
    return None


def release(example_id: int, user) -> None:
    Lease.objects.filter(example_id=example_id, validator=user).delete()


def purge_expired(now: datetime | None = None) -> int:
    return Lease.objects.filter(expires_at__lte=now or timezone.now()).delete()[0]


def empty_reason(task: Task, user, rule: ValidationSettings) -> str:
    """Why `claim_next` found nothing for `user` (only computed when the queue is empty)."""
    scope = Q(fooled=True) if rule.scope == "fooling" else Q()
    written = Example.objects.filter(scope, round__task=task, retracted=False).exclude(
        scoring_state=Example.Scoring.PENDING
    )
    if not written.exists():
        return NOTHING_WRITTEN
    waiting = written.filter(consensus=Example.Consensus.UNVALIDATED)
    if not rule.continue_after_close:
        if waiting.exists() and not task.rounds.filter(status=Round.Status.OPEN).exists():
            return ROUND_CLOSED
        waiting = waiting.filter(round__status=Round.Status.OPEN)
    if not waiting.exists():
        return ALL_VALIDATED
    others = waiting.exclude(author=user).exclude(author__in=linked_authors(task, user))
    if not others.exists():
        return ONLY_OWN
    if not others.exclude(Exists(Validation.objects.filter(example=OuterRef("pk"), validator=user))).exists():
        return ALREADY_VOTED
    return ALL_LEASED


# --- keeping the queue rows in step with the examples ---------------------------------------------


REFRESH_EVERY_S = 15


def refresh_unscored_now_and_then(task: Task) -> None:
    """The safety net of the queue rows' verdicts, at most once per REFRESH_EVERY_S per task (all processes, through
    the cache; every time when the cache is down). A stored verdict reaches its row at once through
    `annotation.signals.verdict_stored`; this only repairs a row whose signal was lost (a worker killed between the
    two writes), so a validator's every request need not pay for it (issue 27)."""
    try:
        due = cache.add(f"queue:refresh-unscored:{task.pk}", 1, REFRESH_EVERY_S)
    except Exception:  # noqa: BLE001 - the cache is down: refresh every time, as before
        due = True
    if due:
        refresh_unscored(task)


def refresh_unscored(task: Task, limit: int = 500) -> None:
    """Copy the verdict of examples scored since their queue row was written (scoring uses update())."""
    ids = QueueItem.objects.filter(task=task, open=True, fooled__isnull=True).values_list("example", flat=True)
    scored = Example.objects.filter(pk__in=list(ids[:limit])).exclude(scoring_state=Example.Scoring.PENDING)
    for fooled in (True, False):
        pks = [pk for pk, f in scored.values_list("pk", "fooled") if bool(f) is fooled]
        if pks:
            QueueItem.objects.filter(pk__in=pks).update(fooled=fooled)


def item_state(example: Example, votes: list[consensus.Vote], rule: ValidationSettings) -> QueueItem:
    decision = consensus.decide(votes, rule, example.target)
    return QueueItem(
        example_id=example.pk,
        task_id=example.round.task_id,
        round_id=example.round_id,
        fooled=None if example.scoring_state == Example.Scoring.PENDING else bool(example.fooled),
        votes=sum(1 for v in votes if not v.override),
        needed=decision.needed,
        open=decision.open and example.consensus == Example.Consensus.UNVALIDATED and not example.retracted,
    )


def votes_and_voters(example_id: int) -> tuple[list[consensus.Vote], set[int]]:
    """The example's votes that count, in the order they were cast, and who cast any vote on it."""
    rows = Validation.objects.filter(example_id=example_id).order_by("id")
    rows = rows.values_list("verdict", "label", "mode", "validator_id", "counted")
    votes = [consensus.Vote(v, label, mode != Validation.Mode.CROWD) for v, label, mode, _, counted in rows if counted]
    return votes, {voter for _, _, _, voter, _ in rows}


def votes_of(example_id: int) -> list[consensus.Vote]:
    return votes_and_voters(example_id)[0]


def sync_examples(example_ids: list[int] | QuerySet) -> int:
    """Rewrite the queue rows of these examples from the examples and their votes (idempotent)."""
    examples = Example.objects.filter(pk__in=example_ids).select_related("round__task")
    rows = [item_state(e, votes_of(e.pk), e.round.task.typed_config.validation) for e in examples]
    QueueItem.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["example"],
        update_fields=["task", "round", "fooled", "votes", "needed", "open"],
    )
    return len(rows)


def sync_queue(task: Task | None = None, chunk: int = 2000) -> int:
    """Repair every queue row (of one task, or all): after bulk imports, and as a periodic safety net."""
    examples = Example.objects.order_by("pk").values_list("pk", flat=True)
    if task is not None:
        examples = examples.filter(round__task=task)
    done, ids = 0, list(examples)
    for start in range(0, len(ids), chunk):
        done += sync_examples(ids[start : start + chunk])
    return done


def on_example_saved(example: Example, created: bool) -> None:
    """Signal hook: give a new example its queue row (one INSERT … ON CONFLICT UPDATE: a row left for the same
    example, e.g. by a re-run import, is rewritten; no savepoint on the writer's path); refresh it on later saves."""
    if created:
        row = _fresh_row(example)
        QueueItem.objects.bulk_create([QueueItem(**row)], update_conflicts=True, unique_fields=["example"],
                                      update_fields=[f for f in row if f != "example_id"])
    else:
        sync_examples([example.pk])


def _fresh_row(example: Example) -> dict:
    rule = example.round.task.typed_config.validation
    state = item_state(example, [], rule)
    return {f: getattr(state, f) for f in ("example_id", "task_id", "round_id", "fooled", "votes", "needed", "open")}
