"""What writers learn about their own examples ("My examples"): the model's verdict, how validation went,
the corrected label, why it was flagged, and whether they may appeal.

Validators' reasons live in validation's votes, and annotation sits below validation; so validation
provides them here when its app is ready (`ValidationConfig.ready`), as annotation provides figures to
tasks. Validators stay anonymous: only their reasons are shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet

from annotation.models import Example
from tasks.models import Task

VoteReasons = Callable[[list[int]], dict[int, list[str]]]
_vote_reasons: VoteReasons | None = None
# examples -> {id: (state, crowd votes so far)}: what the validation queue will do with each (validation.queue.outlook)
Outlook = Callable[[list[Example]], dict[int, tuple[str, int]]]
_outlook: Outlook | None = None

# The queue's states, as validation.queue.outlook reports them.
WAITING, OUT_OF_SCOPE, ROUND_CLOSED, CLOSED = "waiting", "out_of_scope", "round_closed", "closed"


def provide_vote_reasons(reasons: VoteReasons) -> None:
    """Called once by validation: example ids -> the reasons its validators gave (flags, corrections)."""
    global _vote_reasons
    _vote_reasons = reasons


def provide_outlook(outlook: Outlook) -> None:
    """Called once by validation: what its queue will do with each example, by the queue's own rule."""
    global _outlook
    _outlook = outlook


def my_examples(user, task: Task | None = None) -> QuerySet[Example]:
    """The writer's own examples, newest first (retracted ones included: they are still theirs)."""
    mine = Example.objects.filter(author=user).select_related("round__task", "context", "arm").order_by("-id")
    return mine.filter(round__task=task) if task is not None else mine


# A writer may appeal what validators refused: a rejected label, or an example flagged as unusable.
APPEALABLE = (Example.Consensus.REJECTED, Example.Consensus.FLAGGED)


def can_appeal(example: Example) -> bool:
    return not example.retracted and example.appealed_at is None and example.consensus in APPEALABLE


def rows(examples: list[Example]) -> list[dict[str, Any]]:
    reasons = _vote_reasons([e.pk for e in examples]) if _vote_reasons and examples else {}
    queue = _outlook(examples) if _outlook and examples else {}
    return [row(e, reasons.get(e.pk, []), queue.get(e.pk)) for e in examples]


def validation_state(example: Example, queued: tuple[str, int] | None) -> dict[str, Any]:
    """Where the example stands in validation, in words its writer understands: decided (the outcome), on its way
    (votes so far), or never to be validated and why. `queued`: what the queue will do with it (`Outlook`)."""
    votes = queued[1] if queued else 0
    if example.retracted:
        return {"state": "retracted", "text": "Retracted: not validated.", "votes": votes}
    if example.consensus != Example.Consensus.UNVALIDATED:
        return {"state": "decided", "text": example.get_consensus_display(), "votes": votes}
    if example.scoring_state == Example.Scoring.PENDING:
        return {"state": "scoring", "text": "Waiting for the models' verdict; whether it is validated follows from it.",
                "votes": 0}
    if example.scoring_state == Example.Scoring.FAILED:
        return {"state": "not_scored", "text": "Not scored, so not sent to validation; the task's owners can ask "
                                               "for its verdict again.", "votes": 0}
    state = queued[0] if queued else None
    if state == WAITING:
        said = f"{votes} vote{'s' if votes != 1 else ''} so far" if votes else "no votes yet"
        return {"state": state, "text": f"Waiting for validators: {said}.", "votes": votes}
    if state == OUT_OF_SCOPE:
        return {"state": state, "text": "Not sent to validation: it did not fool the models, and this task validates "
                                        "only the examples that fool them.", "votes": votes}
    if state == ROUND_CLOSED:
        return {"state": state, "text": "Not validated: its round closed first, and this task validates examples "
                                        "of open rounds only.", "votes": votes}
    return {"state": "unknown", "text": example.get_consensus_display(), "votes": votes}


def row(example: Example, validator_reasons: list[str], queued: tuple[str, int] | None = None) -> dict[str, Any]:
    # Written in a study arm without the model in the loop (study.arms): its writer is not told the verdict.
    hidden = example.arm_id is not None and not example.arm.model_in_loop
    prediction = {} if hidden else (example.ensemble_prediction or {})
    validation = validation_state(example, queued)
    if hidden and validation["state"] == OUT_OF_SCOPE:
        validation = {**validation, "text": "Not sent to validation: this task validates only some examples."}
    return {
        "id": example.pk,
        "task": example.round.task.slug,
        "task_name": example.round.task.name,
        "round": example.round.number,
        "created_at": example.created_at,
        "context": example.context.payload if example.context_id else None,
        "input": example.input,
        "target": example.target,
        "scoring_state": example.scoring_state,
        "fooled": None if hidden else example.fooled,
        "model_prediction": prediction.get("label", prediction.get("text")) if prediction else None,
        "verdict_hidden": hidden,
        "retracted": example.retracted,
        "consensus": example.consensus,
        "outcome": example.get_consensus_display(),
        "validation": validation,
        "corrected_label": example.validated_label if example.consensus == Example.Consensus.REJECTED else None,
        "flag_reasons": {"yours": example.flag_reason or None, "validators": validator_reasons},
        "appeal": {
            "allowed": can_appeal(example),
            "reason": example.appeal_reason or None,
            "appealed_at": example.appealed_at,
            "resolved_at": example.appeal_resolved_at,
        },
    }
