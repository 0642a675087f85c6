"""The labelled sets the round pipeline hands the model zoo, built from what the dataset export decides.

`exports.splits` owns which examples form each round's train, dev and test split; this module only turns
those rows into `zoo.data.LabelledSet`s:

  training         the imported train items, plus every round's train split (exactly the export's rows)
  "round-<n>/test"  round n's test split (exactly the export's rows)
  "*/test"          the imported test items (the base test set)

An example with no stored split yet is in none of them, so an example trained on can never appear later in
a dev or test set, and a test example is never trained on.
"""

from __future__ import annotations

from exports import splits
from modelzoo import data
from tasks.models import LabeledItem, Round, Task, payload_hash
from zoo.data import LabelledSet

BASE_TEST = "*/test"


def round_split(task: Task, round_: Round, split: str) -> LabelledSet:
    """One split of a round, row for row what its export holds now."""
    kind, config = task.kind_impl, task.typed_config
    out = LabelledSet(f"round-{round_.number}/{split}")
    for row in splits.split_rows(round_, split):
        key = payload_hash("example", row.example_id, row.target)
        out.add(kind.model_input(config, row.context, row.input), row.target, key)
    return out


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
    then the base test set when there is one."""
    names = [f"round-{r.number}/test" for r in splits.rounds_with(task, "test")]
    if LabeledItem.objects.filter(task=task, split=LabeledItem.Split.TEST).exists():
        names.append(BASE_TEST)
    return names


def load(task: Task, name: str) -> LabelledSet:
    """A test set by name: a round's split through the export, anything else from the model zoo's sources."""
    source, _, split = name.partition("/")
    if source.startswith("round-"):
        round_ = task.rounds.get(number=int(source.removeprefix("round-")))
        return round_split(task, round_, splits.check_split(split or "test"))
    return data.load(task, name)


def dataset_label(name: str) -> str:
    if name == BASE_TEST:
        return "base test"
    if name.startswith("round-"):
        return f"round {name.removeprefix('round-').split('/')[0]} test"
    return name
