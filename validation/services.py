"""Use cases of validation: cast a vote (crowd or override) and keep the consensus in step; answer a gold
item; withdraw a validator's votes (suspension, low gold accuracy).

The consensus is derived state: every vote recomputes it from all counted votes of the example, and the
example's `consensus` / `validated_label` and its queue row are written in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.services import are_linked
from annotation.models import Example
from dynabench_site.errors import DomainError
from notify import events as notify_events
from tasks import guidelines, roles
from tasks.access import refusal
from tasks.kinds import InputError
from tasks.kinds.base import clean_text
from tasks.models import Round, Task
from validation import consensus, gold, queue
from validation.models import GoldAnswer, GoldItem, Lease, QueueItem, Validation

MAX_REASON_CHARS = 1000
VERDICTS = [choice.value for choice in Validation.Verdict]
# Why a vote stopped counting (Validation.excluded_reason).
SUSPENDED = "suspended"
LOW_ACCURACY = "gold_accuracy"


class VoteError(DomainError):
    """A vote the rules refuse: `status` 403 (not allowed for this user) or 409 (not in this state);
    `code` names the rule (own_example, decided, ...)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = self.status_code = status
        self.code = code


@dataclass(frozen=True)
class CleanVote:
    verdict: str
    label: Any
    reason: str


@dataclass(frozen=True)
class VoteResult:
    """A vote and the example's consensus after it. An answer on a gold item is kept as `gold_answer`
    instead of a vote (`validation` is None): it never moves the consensus."""

    validation: Validation | None
    decision: consensus.Decision
    gold_answer: GoldAnswer | None = None


def vote_mode(user, task: Task) -> str:
    if roles.can_manage(user, task):
        return Validation.Mode.OWNER
    if roles.has_role(user, roles.EXPERT, task):
        return Validation.Mode.EXPERT
    return Validation.Mode.CROWD


def context_payload(example: Example) -> dict:
    return example.context.payload if example.context_id else {}


def clean_vote(example: Example, verdict: Any, label: Any = None, reason: Any = None) -> CleanVote:
    """Check a vote's input against the rules and the task kind (InputError names the bad field)."""
    if verdict not in VERDICTS:
        raise InputError("verdict", f"must be one of: {', '.join(VERDICTS)}")
    blank = reason is None or (isinstance(reason, str) and not reason.strip())
    text = "" if blank else clean_text("reason", reason, MAX_REASON_CHARS)
    if verdict == consensus.FLAGGED and not text:
        raise InputError("reason", "is required when flagging: say why the example is unusable")
    if verdict != consensus.INCORRECT:
        if label is not None:
            raise InputError("label", "give a corrected label only with the verdict 'incorrect'")
        return CleanVote(verdict, None, text)
    return CleanVote(verdict, corrected_label(example, label), text)


def corrected_label(example: Example, label: Any) -> Any:
    if label is None:
        raise InputError("label", "is required with the verdict 'incorrect': give the right label")
    task = example.round.task
    try:
        cleaned = task.kind_impl.clean_target(task.typed_config, context_payload(example), label)
    except InputError as exc:
        raise InputError(exc.field.replace("target", "label", 1), exc.message) from None
    if cleaned == example.target:
        raise InputError("label", "is the writer's own label; use the verdict 'correct' instead")
    return cleaned


def check_allowed(user, example: Example) -> str:
    """The vote mode for `user` on `example`, or VoteError(403), or GuidelinesNotAcknowledged (409).

    Nobody validates their own example; a crowd validator never validates an example written by an account
    linked to theirs (same sign-up address or external worker id), nor votes once their gold accuracy fell
    below the task's threshold.
    """
    task = example.round.task
    if roles.is_suspended(user, task):
        raise VoteError(403, "suspended", "Your account is suspended from this task.")
    if not roles.has_role(user, roles.VALIDATOR, task):
        raise VoteError(403, "not_validator", refusal(roles.VALIDATOR))
    if example.author_id == user.pk:
        raise VoteError(403, "own_example", "You cannot validate your own example.")
    mode = vote_mode(user, task)
    if mode == Validation.Mode.CROWD:
        if are_linked(user, example.author_id, by_ip=task.typed_config.crowd.same_ip_rule):
            raise VoteError(403, "linked_account", "You cannot validate examples written by an account linked to "
                            "yours (the same sign-up address or worker id).")
        if gold.is_blocked(task, user):
            raise VoteError(403, "low_accuracy", queue.REASONS[queue.LOW_ACCURACY])
    guidelines.check_acknowledged(user, task)
    return mode


def submit_vote(user, example: Example, verdict: Any, label: Any = None, reason: Any = None) -> VoteResult:
    """Record `user`'s vote on `example` and recompute its consensus, all in one transaction (or, on a gold
    item served to a crowd validator, keep their answer and check their accuracy)."""
    mode = check_allowed(user, example)
    vote = clean_vote(example, verdict, label, reason)
    if mode == Validation.Mode.CROWD and (item := served_gold(user, example)) is not None:
        return answer_gold(user, example, item, vote)
    try:
        with transaction.atomic():
            return _vote_locked(user, example.pk, vote, mode)
    except IntegrityError:  # the same validator's second request raced the first
        raise VoteError(409, "already_validated", "You have already validated this example.") from None


def _vote_locked(user, example_id: int, vote: CleanVote, mode: str) -> VoteResult:
    item = QueueItem.objects.select_for_update().filter(pk=example_id).first()
    if item is None:  # an example without its queue row (written before the queue kept one): given one now
        queue.sync_examples([example_id])
        item = QueueItem.objects.select_for_update().get(pk=example_id)
    example = Example.objects.select_related("round__task").get(pk=example_id)
    rule = example.round.task.typed_config.validation
    if mode == Validation.Mode.CROWD:
        check_crowd_vote(user, example, item, rule)
    else:
        check_override(example)
        Validation.objects.filter(example=example, validator=user).delete()  # an override may be revised
    validation = Validation.objects.create(
        example=example, validator=user, verdict=vote.verdict, label=vote.label, reason=vote.reason, mode=mode
    )
    queue.release(example_id, user)
    appeal_decided = mode != Validation.Mode.CROWD and example.appealed_at and not example.appeal_resolved_at
    if appeal_decided:
        Example.objects.filter(pk=example_id).update(appeal_resolved_at=timezone.now())
    decision = apply_consensus(example, rule)
    if appeal_decided:
        notify_events.appeal_decided(example, decision.state, decision.label)  # the writer is told (notify)
    return VoteResult(validation, decision)


def served_gold(user, example: Example) -> GoldItem | None:
    """The gold item behind `example` if the queue served it to `user` (a lease, even an expired one): a gold
    item is never answered by guessing its id; to anyone else it is a decided example like any other. Almost
    every vote is on an example that is no gold item, so that is asked first (one query)."""
    item = gold.active_gold(example)
    if item is None or not Lease.objects.filter(example=example, validator=user).exists():
        return None
    return item


def answer_gold(user, example: Example, item: GoldItem, vote: CleanVote) -> VoteResult:
    """Keep a crowd validator's answer on a gold item; if it leaves them below the task's accuracy
    threshold, their votes on the task stop counting at once."""
    if Validation.objects.filter(example=example, validator=user).exists():
        raise VoteError(409, "already_validated", "You have already validated this example.")
    try:
        with transaction.atomic():
            answer = gold.record_answer(user, item, vote.verdict, vote.label)
    except IntegrityError:
        raise VoteError(409, "already_validated", "You have already validated this example.") from None
    queue.release(example.pk, user)
    task = example.round.task
    if gold.is_blocked(task, user):
        withdraw_votes(task, user, LOW_ACCURACY)
    decision = consensus.Decision(example.consensus, example.validated_label)
    return VoteResult(None, decision, gold_answer=answer)


def withdraw_votes(task: Task, user, reason: str) -> int:
    """Stop counting `user`'s crowd votes on the task's examples and recompute the consensus of each: what
    their votes decided opens again (unless an expert or owner decided it). Returns the examples touched."""
    votes = Validation.objects.filter(validator=user, example__round__task=task, mode=Validation.Mode.CROWD,
                                      counted=True)
    with transaction.atomic():
        example_ids = list(votes.values_list("example_id", flat=True))
        votes.update(counted=False, excluded_reason=reason)
        Lease.objects.filter(validator=user, example__round__task=task).delete()
    rule = task.typed_config.validation
    for example_id in example_ids:
        with transaction.atomic():
            QueueItem.objects.select_for_update().filter(pk=example_id).first()
            example = Example.objects.select_related("round__task").get(pk=example_id)
            apply_consensus(example, rule)
    return len(example_ids)


def vote_reasons(example_ids: list[int]) -> dict[int, list[str]]:
    """The reasons validators gave on these examples (counted votes; anonymous), for the writer's feedback."""
    found: dict[int, list[str]] = {}
    rows = Validation.objects.filter(example_id__in=example_ids, counted=True).exclude(reason="").order_by("id")
    for example_id, reason in rows.values_list("example_id", "reason"):
        found.setdefault(example_id, []).append(reason)
    return found


def check_crowd_vote(user, example: Example, item: QueueItem, rule) -> None:
    """The state rules for a crowd vote (409 when the example is not open to this vote)."""
    check_override(example)
    if example.scoring_state == Example.Scoring.PENDING:
        raise VoteError(409, "not_scored", "This example is still being scored; try again shortly.")
    if rule.scope == "fooling" and not example.fooled:
        raise VoteError(409, "out_of_scope", "This task validates only examples that fooled the model.")
    if example.consensus != Example.Consensus.UNVALIDATED:
        state = example.get_consensus_display().lower()
        raise VoteError(409, "decided", f"This example is already decided ({state}); it takes no more votes.")
    if not rule.continue_after_close and example.round.status != Round.Status.OPEN:
        raise VoteError(409, "round_closed", "The example's round is closed; this task takes no more votes on it.")
    if Validation.objects.filter(example=example, validator=user).exists():
        raise VoteError(409, "already_validated", "You have already validated this example.")
    if not holds_lease(user, example.pk) and not queue.has_room(item, user, rule, timezone.now()):
        raise VoteError(409, "reserved", "Other validators hold this example; ask for the next item instead.")


def check_override(example: Example) -> None:
    if example.retracted:
        raise VoteError(409, "retracted", "The writer retracted this example; it is not validated.")


def holds_lease(user, example_id: int) -> bool:
    return Lease.objects.filter(example_id=example_id, validator=user, expires_at__gt=timezone.now()).exists()


def apply_consensus(example: Example, rule) -> consensus.Decision:
    """Recompute the example's consensus from all its votes; write it and the queue row."""
    votes = queue.votes_of(example.pk)
    decision = consensus.decide(votes, rule, example.target)
    Example.objects.filter(pk=example.pk).update(
        consensus=decision.state, validated_label=decision.label, updated_at=timezone.now()
    )
    example.consensus, example.validated_label = decision.state, decision.label
    state = queue.item_state(example, votes, rule)
    QueueItem.objects.filter(pk=example.pk).update(votes=state.votes, needed=state.needed, open=state.open)
    return decision
