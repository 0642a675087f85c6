"""The dashboard's round-over-round table: every round's ensemble on every round's test split and the base test
set, each cell its error with a 95 % Wilson interval, from the scores the pipeline stored when the rounds closed."""

from __future__ import annotations

import pytest

from modelzoo.models import EnsembleScore
from rounds.dashboard import round_over_round
from rounds.statistics import wilson
from tasks.models import Round
from tests.factories import ExampleFactory, RoundFactory, TaskFactory
from tests.rounds.conftest import fill_task, sentence

# accuracy of round n's ensemble on each set (a round's own test split fooled its own ensemble: 0 % there)
ACCURACY = {1: {"round-1/test": 0.0, "round-2/test": 0.25, "*/test": 0.75},
            2: {"round-1/test": 0.5, "round-2/test": 0.0, "*/test": 0.625},
            3: {"round-1/test": 0.75, "round-2/test": 0.5, "*/test": 0.875}}
SIZES = {"round-1/test": 4, "round-2/test": 4, "*/test": 8}


def two_closed_rounds(slug: str = "rot", scored: tuple[int, ...] = (1, 2, 3)):
    """A sentiment task whose rounds 1 and 2 are closed (each with a test split) and round 3 open, with the
    ensemble scores the pipeline would have stored for the rounds in `scored`."""
    task = TaskFactory(slug=slug, kind="sentiment")
    round1 = fill_task(task)  # base test set (8), round 1 with 4 test examples
    round2 = RoundFactory(task=task, number=2, status=Round.Status.CLOSED)
    for n in range(4):
        label = "positive" if n % 2 else "negative"
        ExampleFactory(round=round2, context=None, input={"text": sentence(label, 400 + n)}, target=label,
                       split="test")
    Round.objects.filter(pk=round1.pk).update(status=Round.Status.CLOSED)
    RoundFactory(task=task, number=3, status=Round.Status.OPEN)
    for number in scored:
        for dataset, accuracy in ACCURACY[number].items():
            EnsembleScore.objects.create(task=task, round_number=number, dataset=dataset, members=[number],
                                         size=SIZES[dataset], metrics={"accuracy": accuracy, "macro_f1": accuracy})
    return task


@pytest.mark.django_db
def test_round_over_round_gives_each_rounds_error_with_its_wilson_interval():
    table = round_over_round(two_closed_rounds())
    assert table["metric"] == "accuracy"
    assert [c["label"] for c in table["columns"]] == ["round 1 test", "round 2 test", "base test"]
    assert [r["round"] for r in table["rows"]] == [1, 2, 3]
    cell = table["rows"][2]["cells"][2]  # round 3's ensemble on the base test set: 1 of 8 wrong
    expected = wilson(1, 8)
    assert (cell["wrong"], cell["size"]) == (1, 8)
    assert cell["error"] == pytest.approx(0.125)
    assert (cell["low"], cell["high"]) == (pytest.approx(expected.low), pytest.approx(expected.high))
    assert table["rows"][0]["cells"][0]["error"] == 1.0  # round 1's own test split fooled round 1's ensemble


def test_the_dashboard_shows_the_round_over_round_table(client, db):
    two_closed_rounds()
    page = client.get("/tasks/rot/dashboard/").content.decode()
    assert "Does each round's model get harder to fool?" in page
    assert 'id="round-over-round-table"' in page and 'id="no-round-over-round"' not in page
    table = page.split('id="round-over-round-table"')[1].split("</table>")[0]
    assert [f'data-round="{n}"' in table for n in (1, 2, 3)] == [True] * 3
    assert table.index("round 1 test") < table.index("round 2 test") < table.index("base test")
    low, high = wilson(1, 8).low, wilson(1, 8).high
    assert f"{100 * low:.1f}% – {100 * high:.1f}%" in table  # round 3 on the base test set: 12.5 %
    assert "12.5%" in table and 'title="1 of 8 wrong"' in table
    assert "100.0%" in table  # the diagonal: a round's test split is what fooled its own ensemble
    assert "read down a column" in page


def test_the_dashboard_says_when_there_is_no_round_over_round_table_yet(client, db):
    two_closed_rounds(scored=(1,))  # only one round's ensemble evaluated
    page = client.get("/tasks/rot/dashboard/").content.decode()
    assert 'id="no-round-over-round"' in page and 'id="round-over-round-table"' not in page
    assert round_over_round(TaskFactory(slug="bare", kind="sentiment"))["rows"] == []
