"""The labelled sets the round pipeline hands the model zoo, built from what the dataset export decides.

`exports.splits` owns which examples form each round's train, dev and test split; this module only turns
those rows into `zoo.data.LabelledSet`s:

  training          the imported train items, plus every round's train split (exactly the export's rows);
                    `training_plan` weights the newest round and carves the early-stopping dev set
  "round-<n>/test"  round n's test split (exactly the export's rows)
  "*/test"          the imported test items (the base test set)
  "*/heldout"       the stable slice of imported train rows the importer held out (tasks.importing): never
                    trained on, so the gate sees a retraining that forgets the base data

An example with no stored split yet is in none of them, so an example trained on can never appear later in
a dev or test set, and a test example is never trained on.

The retraining plan (`training_plan`): each source — the imported train items ("base") and each round's train
split — gives its own stable slice to the dev set (DEV_FRACTION of its rows, lowest key hashes first; the newest
round at most NEW_ROUND_DEV_SHARE of DEV_MAX, the older sources share the rest in proportion to their size), so the
dev set that decides early stopping holds old and new data alike. The dev rows are carved *before* the newest
round is oversampled (`retraining.new_round_weight`: each of its rows repeated the whole part of the weight, a
stable hash-chosen share of them once more for the fractional part), so no copy of a row sits on both sides.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from exports import splits
from modelzoo import data
from tasks.models import LabeledItem, Round, Task, payload_hash
from zoo.data import LabelledSet

BASE_TEST = "*/test"
BASE_HELD_OUT = f"*/{LabeledItem.Split.HELD_OUT.value}"
BASE = "base"

# A test set with fewer rows than this is shown, flagged "small", and decides nothing: it never stops a deploy
# (`rounds.steps.compare`) and does not count in the leaderboard's Dynascore. Why 100: below it one example is more
# than a point, and the 95 % interval of an accuracy near 50 % is wider than +/-10 points (Wilson: +/-9.6 at 100,
# +/-17 at the sentiment demo's 30 hand-written test items), far wider than the deploy tolerance (1 point); issue
# 23's runs saw the 30-item base test stop a retraining three times while the 202- and 451-row held-out slices
# showed no loss.
MIN_TEST_SIZE = 100

# The early-stopping dev set of a retraining (module docstring).
DEV_FRACTION = 0.1  # each source's share of its own rows
DEV_MAX = 400  # dev rows in all (the base data's slice is scaled down to fit)
NEW_ROUND_DEV_SHARE = 0.5  # the newest round's rows are at most this share of DEV_MAX
DEV_MIN_TRAIN = 40  # fewer training rows than this in all: no dev set (every row is trained on, no early stopping)


def round_split(task: Task, round_: Round, split: str) -> LabelledSet:
    """One split of a round, row for row what its export holds now."""
    kind, config = task.kind_impl, task.typed_config
    out = LabelledSet(f"round-{round_.number}/{split}")
    for row in splits.split_rows(round_, split):
        out.add(kind.model_input(config, row.context, row.input), row.target, example_key(row))
    return out


def example_key(row: splits.SplitRow) -> str:
    """A round example's key in the labelled sets (the models' training keys, so its training dynamics' too)."""
    return payload_hash("example", row.example_id, row.target)


def training_set(task: Task) -> LabelledSet:
    """What the next round's models learn: imported train items and each round's train split."""
    out = data.training_set(task)
    rounds = list(splits.rounds_with_data(task))
    for round_ in rounds:
        out.extend(round_split(task, round_, "train"))
    if rounds:
        out.name = f"{out.name}+round-{','.join(str(r.number) for r in rounds)}/train"
    return out


def test_sets(task: Task) -> list[str]:
    """Every round's test split that has rows as stored (the pipeline assigns splits before it evaluates),
    then the base test set and the base held-out slice when the task has them."""
    names = [f"round-{r.number}/test" for r in splits.rounds_with(task, "test")]
    if LabeledItem.objects.filter(task=task, split=LabeledItem.Split.TEST).exists():
        names.append(BASE_TEST)
    if LabeledItem.objects.filter(task=task, split=LabeledItem.Split.HELD_OUT).exists():
        names.append(BASE_HELD_OUT)
    return names


def load(task: Task, name: str) -> LabelledSet:
    """A test set by name: a round's split through the export, anything else from the model zoo's sources."""
    source, _, split = name.partition("/")
    if source.startswith("round-"):
        round_ = task.rounds.get(number=int(source.removeprefix("round-")))
        return round_split(task, round_, splits.check_split(split or "test"))
    return data.load(task, name)


def set_size(task: Task, name: str) -> int:
    """How many rows test set `name` has now (a count: nothing is loaded)."""
    source, _, split = name.partition("/")
    if source.startswith("round-"):
        round_ = task.rounds.filter(number=int(source.removeprefix("round-"))).first()
        return splits.in_split(round_, split or "test").count() if round_ is not None else 0
    rows = LabeledItem.objects.filter(task=task, split=split or "train")
    if source not in ("", "*"):
        rows = rows.filter(collection__in=source.split(","))
    return rows.count()


def describe(task: Task, name: str) -> str:
    """What test set `name` is, in a few words (the leaderboard's column titles)."""
    source, _, split = name.partition("/")
    if source.startswith("round-"):
        return f"round {source.removeprefix('round-')}'s {split or 'test'} split: examples written on the platform"
    collections = sorted(set(LabeledItem.objects.filter(task=task, split=split).order_by()
                             .values_list("collection", flat=True).distinct()))
    where = f" ({', '.join(collections)})" if collections else ""
    if name == BASE_TEST:
        return f"the task's imported test items{where}"
    if name == BASE_HELD_OUT:
        return f"imported training rows held out at import, never trained on{where}"
    return name


def describe_sets(task: Task, names: list[str]) -> list[dict[str, Any]]:
    """Each test set's name, label, what it is, its size now, and whether it is too small to decide anything."""
    out = []
    for name in names:
        size = set_size(task, name)
        out.append({"name": name, "label": dataset_label(name), "description": describe(task, name), "size": size,
                    "small": size < MIN_TEST_SIZE, "min_size": MIN_TEST_SIZE})
    return out


def dataset_label(name: str) -> str:
    if name == BASE_TEST:
        return "base test"
    if name == BASE_HELD_OUT:
        return "base held-out"
    if name.startswith("round-"):
        return f"round {name.removeprefix('round-').split('/')[0]} test"
    return name


# --- the retraining plan: the data each source gives, the dev set, the newest round's weight ---------------


@dataclass
class SourcePart:
    """What one source gives a retraining: its rows, those kept for the dev set, and the rows handed to training
    (with the newest round's copies)."""

    name: str  # "base" or "round <n>"
    rows: int
    dev: int
    train: int  # rows handed to training, copies included
    weight: float = 1.0


@dataclass
class TrainingPlan:
    train: LabelledSet
    dev: LabelledSet | None  # None: the recipe has no use for one (recipe "full")
    parts: list[SourcePart] = field(default_factory=list)
    newest: int | None = None  # the weighted round
    weight: float = 1.0

    def summary(self) -> dict[str, Any]:
        return {"train": len(self.train.keys), "dev": len(self.dev.keys) if self.dev is not None else None,
                "newest_round": self.newest, "new_round_weight": self.weight,
                "sources": [vars(p) for p in self.parts]}

    def describe(self) -> list[str]:
        """The step's log lines: what it trains on, per source."""
        lines = []
        for p in self.parts:
            copies = f", weight {p.weight:g}: {p.train} rows with copies" if p.weight != 1 else ""
            lines.append(f"  {p.name}: {p.rows} rows, {p.dev} to the dev set, {p.rows - p.dev} trained on{copies}")
        weighted = (f"round {self.newest} (the newest) weighted {self.weight:g}" if self.newest is not None
                    else "no round weighted (the closing round brought no training rows)")
        if self.dev is None:
            dev = "no dev set (this recipe trains a fixed number of passes)"
        elif self.dev.keys:
            dev = f"dev set {len(self.dev.keys)} rows ({', '.join(f'{p.name} {p.dev}' for p in self.parts if p.dev)}), " \
                  "carved before the copies"
        else:
            dev = f"no dev set (fewer than {DEV_MIN_TRAIN} training rows: no early stopping)"
        return [f"training data: {len(self.train.keys)} rows handed to training; {weighted}; {dev}", *lines]


def training_plan(task: Task, *, weight: float | None = None, newest: int | None = None,
                  with_dev: bool = True) -> TrainingPlan:
    """What a retraining learns from (module docstring): the imported train items, every round's train split, the
    `newest` round's rows repeated by `weight` (default: the task's `retraining.new_round_weight`), less the dev
    set carved per source before the copies. `newest`: the round being closed; None: the highest-numbered round
    with training rows. Without `with_dev` every row is trained on (dev None)."""
    weight = float(task.typed_config.retraining.new_round_weight if weight is None else weight)
    sources: list[tuple[str, int | None, LabelledSet]] = [(BASE, None, data.training_set(task))]
    for round_ in splits.rounds_with_data(task):
        sources.append((f"round {round_.number}", round_.number, round_split(task, round_, "train")))
    sources = [s for s in sources if s[2].keys]
    numbers = [number for _, number, _ in sources if number is not None]
    if newest is None:
        newest = max(numbers, default=None)
    elif newest not in numbers:
        newest = None
    newest_name = f"round {newest}" if newest is not None else None
    quotas = dev_quotas({name: len(rows.keys) for name, _, rows in sources}, newest_name) if with_dev else {}
    union = "+".join(_source_names(sources)) or "nothing"
    train = LabelledSet(union if newest is None or weight == 1 else f"{union} (round {newest} x{weight:g})")
    dev = LabelledSet(f"dev of {union}") if with_dev else None
    parts = []
    for name, number, rows in sources:
        kept, held = carve(rows, quotas.get(name, 0))
        w = weight if number is not None and number == newest else 1.0
        before = len(train.keys)
        train.extend(oversample(kept, w))
        if dev is not None:
            dev.extend(held)
        parts.append(SourcePart(name, len(rows.keys), len(held.keys), len(train.keys) - before, w))
    return TrainingPlan(train, dev, parts, newest, weight)


def _source_names(sources: list[tuple[str, int | None, LabelledSet]]) -> list[str]:
    base = [rows.name for name, _, rows in sources if name == BASE]
    numbers = [str(number) for _, number, _ in sources if number is not None]
    return base + ([f"round-{','.join(numbers)}/train"] if numbers else [])


def dev_quotas(sizes: dict[str, int], newest: str | None) -> dict[str, int]:
    """Dev rows per source: DEV_FRACTION of each source's rows (rounded), the newest round's at most
    NEW_ROUND_DEV_SHARE × DEV_MAX, the other sources scaled down together to fit the rest of DEV_MAX. Nothing
    (every quota 0) when all sources together have fewer than DEV_MIN_TRAIN rows."""
    if sum(sizes.values()) < DEV_MIN_TRAIN:
        return {name: 0 for name in sizes}
    wanted = {name: int(n * DEV_FRACTION + 0.5) for name, n in sizes.items()}
    out = {}
    if newest in wanted:
        out[newest] = min(wanted[newest], int(DEV_MAX * NEW_ROUND_DEV_SHARE))
    older = {name: n for name, n in wanted.items() if name != newest}
    room, asked = DEV_MAX - sum(out.values()), sum(older.values())
    for name, n in older.items():
        out[name] = n if asked <= room else int(n * room / asked)
    return out


def _fraction(salt: str, key: str) -> float:
    """A number in [0, 1) fixed by a row's key and the purpose (`salt`): stable between runs and databases."""
    return int(hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:12], 16) / 16 ** 12


def carve(rows: LabelledSet, n_dev: int) -> tuple[LabelledSet, LabelledSet]:
    """(train, dev): the `n_dev` rows with the lowest dev hash go to dev (every row of a key that is chosen, so a
    key is never on both sides), the rest to train; order kept."""
    ranked = sorted(set(rows.keys), key=lambda k: _fraction("dev", k))
    chosen = set(ranked[:max(n_dev, 0)])
    train, dev = LabelledSet(rows.name), LabelledSet(f"dev of {rows.name}")
    for i, t, k in zip(rows.inputs, rows.targets, rows.keys, strict=True):
        (dev if k in chosen else train).add(i, t, k)
    return train, dev


def oversample(rows: LabelledSet, weight: float) -> LabelledSet:
    """Each row int(weight) times, and once more for a stable share (weight's fractional part) of the rows, chosen
    by key hash. Copies keep their key (the model's fingerprint counts them)."""
    whole, part = int(weight), weight - int(weight)
    out = LabelledSet(rows.name)
    for i, t, k in zip(rows.inputs, rows.targets, rows.keys, strict=True):
        for _ in range(whole + (1 if part > 0 and _fraction("weight", k) < part else 0)):
            out.add(i, t, k)
    return out
