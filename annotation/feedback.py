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


def provide_vote_reasons(reasons: VoteReasons) -> None:
    """Called once by validation: example ids -> the reasons its validators gave (flags, corrections)."""
    global _vote_reasons
    _vote_reasons = reasons


def my_examples(user, task: Task | None = None) -> QuerySet[Example]:
    """The writer's own examples, newest first (retracted ones included: they are still theirs)."""
    mine = Example.objects.filter(author=user).select_related("round__task", "context").order_by("-id")
    return mine.filter(round__task=task) if task is not None else mine


# A writer may appeal what validators refused: a rejected label, or an example flagged as unusable.
APPEALABLE = (Example.Consensus.REJECTED, Example.Consensus.FLAGGED)


def can_appeal(example: Example) -> bool:
    return not example.retracted and example.appealed_at is None and example.consensus in APPEALABLE


def rows(examples: list[Example]) -> list[dict[str, Any]]:
    reasons = _vote_reasons([e.pk for e in examples]) if _vote_reasons and examples else {}
    return [row(e, reasons.get(e.pk, [])) for e in examples]


def row(example: Example, validator_reasons: list[str]) -> dict[str, Any]:
    prediction = example.ensemble_prediction or {}
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
        "fooled": example.fooled,
        "model_prediction": prediction.get("label", prediction.get("text")) if prediction else None,
        "retracted": example.retracted,
        "consensus": example.consensus,
        "outcome": example.get_consensus_display(),
        "corrected_label": example.validated_label if example.consensus == Example.Consensus.REJECTED else None,
        "flag_reasons": {"yours": example.flag_reason or None, "validators": validator_reasons},
        "appeal": {
            "allowed": can_appeal(example),
            "reason": example.appeal_reason or None,
            "appealed_at": example.appealed_at,
            "resolved_at": example.appeal_resolved_at,
        },
    }
