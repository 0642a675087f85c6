"""What exports record of a study: every format carries each example's arm and language; the examples of people who
withdrew consent leave every new export (published snapshots are not rewritten), and the dataset card says how
many, lists the arms and the consent versions."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest
from django.utils import timezone

from exports import services, splits
from exports.formats import FORMATS
from exports.streaming import stream_records
from study.models import Arm, Consent, ConsentRecord, Participant
from tests.exports.conftest import make_example
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(open_round):
    """Two arms; three writers (one in each arm, and one who will withdraw), their examples in en, es and ar."""
    task = open_round.task
    loop = Arm.objects.create(task=task, key="loop", name="Model in the loop", position=0)
    standard = Arm.objects.create(task=task, key="standard", name="Standard", model_in_loop=False, position=1)
    consent = Consent.objects.create(task=task, version=1, text="I agree.")
    people = {name: UserFactory(username=name) for name in ("ana", "bea", "carl")}
    for seq, (name, arm) in enumerate((("ana", loop), ("bea", standard), ("carl", loop))):
        Participant.objects.create(task=task, user=people[name], arm=arm, sequence=seq)
        ConsentRecord.objects.create(consent=consent, task=task, user=people[name], version=1)
    made = {
        "ana": [make_example(open_round, fooled=False, author=people["ana"], arm=loop, language="en") for _ in range(3)],
        "bea": [make_example(open_round, fooled=False, author=people["bea"], arm=standard, language="es")
                for _ in range(2)],
        "carl": [make_example(open_round, fooled=False, author=people["carl"], arm=loop, language="ar")
                 for _ in range(4)],
    }
    return {"task": task, "people": people, "made": made, "consent": consent}


def withdraw(study, name: str) -> None:
    task, user = study["task"], study["people"][name]
    now = timezone.now()
    Participant.objects.filter(task=task, user=user).update(withdrawn_at=now)
    ConsentRecord.objects.filter(task=task, user=user).update(withdrawn_at=now)


def records(round, fmt: str) -> list[dict]:
    data = b"".join(stream_records(round.task, splits.in_split(round, "train"), FORMATS[fmt]))
    if fmt == "jsonl":
        return [json.loads(line) for line in data.splitlines()]
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(data.decode())))
    return pq.read_table(io.BytesIO(data)).to_pylist()


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_every_format_carries_arm_and_language(study, open_round, fmt):
    splits.assign_splits(open_round)
    rows = records(open_round, fmt)
    by_id = {int(r["example_id"]): r for r in rows}
    assert len(rows) == 9
    for name, arm, language in (("ana", "loop", "en"), ("bea", "standard", "es"), ("carl", "loop", "ar")):
        for example in study["made"][name]:
            assert (by_id[example.pk]["arm"], by_id[example.pk]["language"]) == (arm, language)


def test_outside_a_study_arm_and_language_are_empty(open_round):
    example = make_example(open_round, fooled=False)
    splits.assign_splits(open_round)
    (row,) = records(open_round, "jsonl")
    assert row["example_id"] == example.pk and row["arm"] is None and row["language"] is None


def test_a_withdrawn_person_leaves_new_exports_and_the_card_says_how_many(study, open_round):
    owner = UserFactory(username="task-owner")
    before, _ = services.publish_snapshot(open_round, owner)
    assert before.counts["train"] == 9
    path = services.snapshot_path(before)
    old_bytes = path.read_bytes()

    withdraw(study, "carl")
    splits.assign_splits(open_round)
    ids = {r["example_id"] for r in records(open_round, "jsonl")}
    assert ids == {e.pk for name in ("ana", "bea") for e in study["made"][name]}
    assert splits.publish_preview(open_round).rows["train"] == 5

    after, created = services.publish_snapshot(open_round, owner)
    assert created and after.version == before.version + 1 and after.counts["train"] == 5
    assert path.read_bytes() == old_bytes  # the earlier version is not rewritten
    with zipfile.ZipFile(services.snapshot_path(after)) as archive:
        card = archive.read("README.md").decode()
        lines = archive.read("data/train.jsonl").decode().splitlines()
    assert len(lines) == 5
    assert "4 examples of 1 person who withdrew consent are not included" in card
    assert "| `loop` | Model in the loop | yes | offered | 3 |" in card
    assert "| `standard` | Standard | no (scored afterwards) | offered | 2 |" in card
    assert "version 1 (" in card
    assert "en: 3; es: 2" in card and "ar:" not in card
    with zipfile.ZipFile(path) as archive:
        assert "Nobody whose examples this round holds has withdrawn consent" in archive.read("README.md").decode()


def test_the_card_counts_people_in_the_plural_and_a_withdrawn_excluded_example(study, open_round):
    make_example(open_round, consensus="rejected", author=study["people"]["bea"], arm=Arm.objects.get(key="standard"))
    withdraw(study, "carl")
    withdraw(study, "bea")
    snapshot, _ = services.publish_snapshot(open_round, UserFactory(username="task-owner"), include_excluded=True)
    assert snapshot.counts == {"train": 3, "dev": 0, "test": 0, "excluded": 0}
    with zipfile.ZipFile(services.snapshot_path(snapshot)) as archive:
        card = archive.read("README.md").decode()
    assert "7 examples of 2 people who withdrew consent are not included" in card
