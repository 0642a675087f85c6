"""Which examples a round's dataset holds, and in which split.

An example's split follows from the task's seed and its id alone (a hash), so it is the same on every
export. It is stored the first time the example is exported and never moved afterwards, even if the
owner later changes the ratios or the seed:

- not fooled, and usable           -> train
- fooled and verified               -> train / dev / test by the task's ratios
- fooled, not (yet) verified        -> train when its hash bucket is train; otherwise held back until
                                       validation decides, so a future dev/test example never leaks
                                       into a train file first
- rejected, flagged (by validators or the writer), retracted, or not scored: excluded
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q, QuerySet

from annotation.models import Example
from dynabench_site.errors import InvalidInput
from tasks.models import Round, Task

SPLITS = ("train", "dev", "test")
EXCLUDED = "excluded"
ASSIGN_BATCH = 5000
REANALYZE_AFTER = 10_000


class UnknownSplit(InvalidInput, ValueError):
    def __init__(self, message: str):
        super().__init__(message, field="split")


def check_split(name: str) -> str:
    if name not in SPLITS:
        raise UnknownSplit(f"unknown split {name!r}; choose one of: {', '.join(SPLITS)}")
    return name


@dataclass(frozen=True)
class SplitRule:
    """The task's ratios and seed, read once per export."""

    task_id: int
    seed: int
    train: float
    dev: float

    @classmethod
    def of(cls, task: Task) -> SplitRule:
        ratios = task.typed_config.splits
        return cls(task.pk, ratios.seed, ratios.train, ratios.dev)

    def bucket(self, example_id: int) -> str:
        """The split an example's hash falls in."""
        digest = hashlib.sha256(f"dynabench-split|{self.task_id}|{self.seed}|{example_id}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") / 2**64
        if point < self.train:
            return "train"
        return "dev" if point < self.train + self.dev else "test"

    def decide(self, example_id: int, fooled: bool, consensus: str) -> str | None:
        """The split to store now, or None to hold the example back for the moment."""
        if not fooled:
            return "train"
        bucket = self.bucket(example_id)
        return bucket if bucket == "train" or consensus == Example.Consensus.VERIFIED else None


def exported(round: Round) -> QuerySet:
    """Examples that can ever appear in an export: scored and not retracted."""
    return Example.objects.filter(round=round, retracted=False, scoring_state=Example.Scoring.SCORED)


EXCLUDED_Q = Q(consensus__in=[Example.Consensus.REJECTED, Example.Consensus.FLAGGED]) | Q(flagged=True)


def usable(round: Round) -> QuerySet:
    return exported(round).exclude(EXCLUDED_Q)


def excluded(round: Round) -> QuerySet:
    return exported(round).filter(EXCLUDED_Q)


def in_split(round: Round, split: str) -> QuerySet:
    return usable(round).filter(split=check_split(split))


def assign_splits(round: Round) -> dict[str, int]:
    """Store a split on every usable example that has none and can have one now. Idempotent.

    Reads in id order, a batch at a time (no open cursor while writing); the update only touches rows
    whose split is still empty, so a concurrent export never moves one.
    """
    rule = SplitRule.of(round.task)
    pending = usable(round).filter(split__isnull=True).order_by("id").values_list("id", "fooled", "consensus")
    assigned = dict.fromkeys(SPLITS, 0)
    last = 0
    while rows := list(pending.filter(id__gt=last)[:ASSIGN_BATCH]):
        last = rows[-1][0]
        decided: dict[str, list[int]] = {name: [] for name in SPLITS}
        for example_id, fooled, consensus in rows:
            split = rule.decide(example_id, bool(fooled), consensus)
            if split is not None:
                decided[split].append(example_id)
        for split, ids in decided.items():
            assigned[split] += _store(ids, split) if ids else 0
    if sum(assigned.values()) >= REANALYZE_AFTER:
        refresh_statistics()
    return assigned


def refresh_statistics() -> None:
    """After a large assignment, PostgreSQL's statistics still say every split is empty, and it then
    plans the export's joins for one row (a scan of all contexts per example). ANALYZE samples the
    table (seconds, not minutes), so the next export gets a sane plan without waiting for autovacuum."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Example._meta.db_table}")


def _store(ids: list[int], split: str) -> int:
    return Example.objects.filter(id__in=ids, split__isnull=True).update(split=split)


def held_back(round: Round) -> int:
    """Usable examples without a split yet (fooled, awaiting validation, with a dev/test hash)."""
    return usable(round).filter(split__isnull=True).count()
