from __future__ import annotations

import json

import pytest

from exports import splits
from exports.formats import FORMATS
from exports.records import annotator_id
from exports.streaming import stream_records
from tests.factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_annotator_ids_are_stable_within_a_task_and_differ_across_tasks(task):
    user = UserFactory()
    other = TaskFactory(slug="other-task")
    assert annotator_id(task, user.pk) == annotator_id(task, user.pk)
    assert annotator_id(task, user.pk) != annotator_id(other, user.pk)
    assert annotator_id(task, user.pk) != annotator_id(task, UserFactory().pk)


def test_annotator_ids_depend_on_the_secret_key(task, settings):
    user = UserFactory()
    before = annotator_id(task, user.pk)
    settings.SECRET_KEY = "another-secret"
    assert annotator_id(task, user.pk) != before


def test_exported_records_reveal_no_username_email_or_user_id(mixed_round, open_round):
    splits.assign_splits(open_round)
    body = b"".join(stream_records(open_round.task, splits.usable(open_round), FORMATS["jsonl"])).decode()
    writer = mixed_round["verified"][0].author
    assert "writer" not in body and "example.org" not in body
    records = [json.loads(line) for line in body.splitlines()]
    mine = {r["annotator_id"] for r in records if r["example_id"] in {e.pk for e in mixed_round["verified"]}}
    assert mine == {annotator_id(open_round.task, writer.pk)}
    assert all("author" not in r and str(writer.pk) != r["annotator_id"] for r in records)
