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
- written by someone who withdrew consent from the task's study: in no export made after the withdrawal
  (exports.withdrawals; a published snapshot is not rewritten), and so not trained or evaluated on either

This module is the one owner of that decision: exports write these splits, and the round pipeline trains on
exactly the train split and evaluates on the test split (`split_rows`), so an example without a stored split
is never trained on, and an example trained on (split = train, stored for good) never reaches dev or test.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Count, Q, QuerySet

from annotation.models import Example
from dynabench_site.errors import InvalidInput
from exports import withdrawals
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
    """Examples that can ever appear in an export: scored, not retracted, and not of someone who withdrew."""
    return _exported(round.task, round=round)


def _exported(task: Task, **where: Any) -> QuerySet:
    rows = Example.objects.filter(retracted=False, scoring_state=Example.Scoring.SCORED, **where)
    return withdrawals.without_withdrawn(rows, task)


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


@dataclass(frozen=True)
class Preview:
    """What `round`'s dataset would hold if it were exported now (nothing stored): rows per split, how many of
    them validators verified, the fooling examples held back for validation, and the excluded ones."""

    rows: dict[str, int]
    validated: dict[str, int]
    held_back: int
    excluded: int

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    @property
    def total_validated(self) -> int:
        return sum(self.validated.values())

    @property
    def empty(self) -> list[str]:
        return [name for name in SPLITS if not self.rows[name]]


def publish_preview(round: Round) -> Preview:
    """Stored splits plus those `SplitRule.decide` would store now, counted without storing anything."""
    rows, validated = dict.fromkeys(SPLITS, 0), dict.fromkeys(SPLITS, 0)
    verified = Example.Consensus.VERIFIED
    stored = usable(round).exclude(split__isnull=True).values_list("split", "consensus").annotate(n=Count("id"))
    for split, consensus, n in stored.order_by():
        if split in rows:
            rows[split] += n
            validated[split] += n if consensus == verified else 0
    rule, held = SplitRule.of(round.task), 0
    pending = usable(round).filter(split__isnull=True).values_list("id", "fooled", "consensus")
    for example_id, fooled, consensus in pending.iterator(chunk_size=ASSIGN_BATCH):
        split = rule.decide(example_id, bool(fooled), consensus)
        if split is None:
            held += 1
        else:
            rows[split] += 1
            validated[split] += consensus == verified
    return Preview(rows, validated, held, excluded(round).count())


def preview(round: Round) -> dict[str, int]:
    """`publish_preview` as counts: per split, held back and excluded. The owner console shows it before a round is
    closed."""
    seen = publish_preview(round)
    return {**seen.rows, "held_back": seen.held_back, "excluded": seen.excluded}


def held_back(round: Round) -> int:
    """Usable examples without a split yet (fooled, awaiting validation, with a dev/test hash)."""
    return usable(round).filter(split__isnull=True).count()


# -- the splits as the round pipeline reads them (training and evaluation) ----------------------------


def rounds_with_data(task: Task) -> QuerySet:
    """The rounds whose examples form datasets: every round past its draft."""
    return task.rounds.exclude(status=Round.Status.DRAFT).order_by("number")


def rounds_with(task: Task, split: str) -> list[Round]:
    """Rounds that have at least one example stored in `split` (and still usable)."""
    having = _exported(task, round__task=task, split=check_split(split)).exclude(EXCLUDED_Q).values("round_id")
    return list(Round.objects.filter(pk__in=having).order_by("number"))


@dataclass(frozen=True)
class SplitRow:
    """One example of a split, as a model learns from it or is scored on it."""

    example_id: int
    context: dict[str, Any]
    input: dict[str, Any]
    target: Any


def learned_target(target: Any, validated_label: Any) -> Any:
    """The label a model learns: the validated label where validators gave one, else the writer's target
    (the export's `label` column)."""
    return validated_label if validated_label is not None else target


def split_rows(round: Round, split: str) -> Iterator[SplitRow]:
    """The examples of one split of `round`, exactly as an export of it now would hold them.

    Splits are assigned first (as a live export does); an example still held back is in no split, so it is
    neither trained nor tested on until validation decides, and once stored its split never moves.
    """
    assign_splits(round)
    rows = in_split(round, split).order_by("id").values_list("id", "context__payload", "input", "target", "validated_label")
    for example_id, context, model_input, target, validated in rows.iterator(chunk_size=ASSIGN_BATCH):
        yield SplitRow(example_id, context or {}, model_input, learned_target(target, validated))
