"""The consensus rule: pure functions from votes to an outcome, configurable per task.

An *outcome* is what a vote says about the example: ``correct``, ``flagged``, or ``incorrect`` with one
corrected label. Votes match when their outcomes are equal (two "incorrect" votes with different
corrected labels do not match).

- quorum: the first outcome with `quorum` matching crowd votes decides; at most ``2 * quorum - 1`` crowd
  votes are taken, and once no outcome can reach the quorum within that cap the example is disputed;
- adaptive: as quorum, but when the first `adaptive_min` votes all agree, they decide at once;
- an expert's or owner's vote overrides the crowd (the latest override wins).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tasks.kinds.base import ValidationSettings

CORRECT, INCORRECT, FLAGGED = "correct", "incorrect", "flagged"
VERIFIED, REJECTED, DISPUTED, UNVALIDATED = "verified", "rejected", "disputed", "unvalidated"


def outcome_key(verdict: str, label: Any = None) -> str:
    if verdict == INCORRECT:
        return f"{INCORRECT}:{json.dumps(label, sort_keys=True, ensure_ascii=False)}"
    return verdict


@dataclass(frozen=True)
class Vote:
    verdict: str
    label: Any = None
    override: bool = False

    @property
    def key(self) -> str:
        return outcome_key(self.verdict, self.label)


@dataclass(frozen=True)
class Decision:
    state: str  # an Example.Consensus value
    label: Any = None  # the validated label (verified: the writer's; rejected: the corrected one)
    needed: int = 0  # the fewest further crowd votes that could decide (0 once decided or disputed)

    @property
    def open(self) -> bool:
        return self.state == UNVALIDATED


def max_votes(rule: ValidationSettings) -> int:
    return 2 * rule.quorum - 1


def decide(votes: Sequence[Vote], rule: ValidationSettings, writer_label: Any) -> Decision:
    """The consensus of `votes` (in the order they were cast)."""
    overrides = [v for v in votes if v.override]
    if overrides:
        return settle(overrides[-1], writer_label)
    crowd = list(votes)
    if not crowd:
        return Decision(UNVALIDATED, needed=first_needed(rule))
    early = _adaptive(crowd, rule)
    if early is not None:
        return settle(early, writer_label)
    top_key, top = Counter(v.key for v in crowd).most_common(1)[0]
    if top >= rule.quorum:
        return settle(next(v for v in crowd if v.key == top_key), writer_label)
    if top + max_votes(rule) - len(crowd) < rule.quorum:
        return Decision(DISPUTED)
    return Decision(UNVALIDATED, needed=_needed(crowd, rule, top))


def first_needed(rule: ValidationSettings) -> int:
    return min(rule.adaptive_min, rule.quorum) if rule.mode == "adaptive" else rule.quorum


def _adaptive(crowd: list[Vote], rule: ValidationSettings) -> Vote | None:
    """In adaptive mode: the first `adaptive_min` votes, when they all agree."""
    m = rule.adaptive_min
    if rule.mode != "adaptive" or len(crowd) < m:
        return None
    first = crowd[:m]
    return first[0] if len({v.key for v in first}) == 1 else None


def _needed(crowd: list[Vote], rule: ValidationSettings, top: int) -> int:
    unanimous = len({v.key for v in crowd}) == 1
    if rule.mode == "adaptive" and unanimous and len(crowd) < rule.adaptive_min:
        return min(rule.adaptive_min - len(crowd), rule.quorum - top)
    return rule.quorum - top


def settle(vote: Vote, writer_label: Any) -> Decision:
    if vote.verdict == CORRECT:
        return Decision(VERIFIED, label=writer_label)
    if vote.verdict == INCORRECT:
        return Decision(REJECTED, label=vote.label)
    return Decision(FLAGGED)
