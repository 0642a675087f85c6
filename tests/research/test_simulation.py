"""`python -m research.simulate_rounds`: labelled examples replayed through the real services by simulated writers and
validators, the round closed by the pipeline, the live ensemble's held-out error reported before and after."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Example
from modelzoo.services import active_ensemble, default_spec, deploy_ensemble, train_model
from research.simulate_rounds.command import Command
from research.simulate_rounds.replay import paired_bootstrap, wilson
from rounds.models import PipelineRun
from tests.factories import TaskFactory
from tests.rounds.conftest import _fast, fill_task, sentence  # noqa: F401 - `_fast`: tiny models, inline jobs


@pytest.fixture
def task(db):
    task = TaskFactory(slug="sim", kind="sentiment")
    fill_task(task, examples=0)
    live = [train_model(task, default_spec(task, seed=0, epochs=1, batch_size=8, encoder="tiny"), name="live-r1")]
    deploy_ensemble(task.rounds.get(number=1), live)
    return task


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def rows(start: int, n: int) -> list[dict]:
    return [{"uid": f"u{start + i}", "text": sentence("positive" if i % 2 else "negative", start + i),
             "label": "positive" if i % 2 else "negative"} for i in range(n)]


def test_simulate_rounds_replays_a_file_and_reports_the_error_before_and_after(task, tmp_path):
    adversarial = rows(500, 24)
    adversarial[0]["writer_label"] = "positive"  # a writer who gets it wrong: the validators say so
    source = write(tmp_path / "adversarial.jsonl", adversarial)
    heldout = write(tmp_path / "heldout.jsonl", rows(900, 12))
    report, figures = tmp_path / "report.md", tmp_path / "report.json"
    call_command(Command(), "sim", str(source), "--heldout", str(heldout), "--writers", "3",
                 "--validators", "3", "--report", str(report), "--json", str(figures))
    data = json.loads(figures.read_text())
    played, name = data["rounds"][0], str(heldout)
    assert played["rows"] == 24 and played["submitted"] == 24 and data["heldout_sizes"] == {name: 12}
    assert played["number"] == 1 and played["opened_round"] == 2
    assert played["pipeline"]["status"] == "done"
    before, after = (row["errors"][name] for row in data["ensembles"])  # the live ensemble, then round 2's
    for interval in (before, after):
        assert interval["low"] <= interval["value"] <= interval["high"]
        assert interval["value"] * 12 == pytest.approx(round(interval["value"] * 12))  # a share of 12 examples
    (test,) = data["tests"]
    diff = test["difference"]
    assert diff["low"] <= diff["value"] <= diff["high"]
    assert diff["value"] == pytest.approx(after["value"] - before["value"])
    assert 0 <= test["p_value"] <= 1
    # Real rows through the real services: the simulated writers' examples, scored by the live ensemble, voted on.
    examples = Example.objects.filter(round__task=task, round__number=1)
    assert examples.count() == 24 and not examples.filter(fooled__isnull=True).exists()
    assert set(examples.values_list("author__username", flat=True)) == {f"sim-sim-writer-{i}" for i in (1, 2, 3)}
    assert played["fooled"] == examples.filter(fooled=True).count()
    wrong = examples.get(idempotency_key="sim-1-u500")
    if wrong.fooled:  # only examples that fooled the model are validated (the task's scope)
        assert wrong.consensus == "rejected"
    assert played["votes"] >= 3 * examples.filter(fooled=True).exclude(pk=wrong.pk).count()
    # The round was closed through the pipeline, and the next one opened with the retrained ensemble.
    run = PipelineRun.objects.get(task=task)
    assert active_ensemble(task.rounds.get(number=2)) is not None
    text = report.read_text()
    assert "| round 1 (live at start) |" in text and "| round 2 (after round 1) |" in text and "95 %" in text
    assert "McNemar p" in text
    assert f"pipeline #{run.pk}: done" in text


def test_simulate_rounds_needs_a_live_ensemble_or_bootstrap(db, tmp_path):
    task = TaskFactory(slug="bare", kind="sentiment")
    source = write(tmp_path / "a.jsonl", rows(0, 2))
    with pytest.raises(CommandError, match="no open round with a live ensemble"):
        call_command(Command(), task.slug, str(source), "--heldout", str(source))


def test_simulate_rounds_refuses_a_file_that_does_not_fit_the_task(task, tmp_path):
    source = write(tmp_path / "a.jsonl", [{"premise": "x", "hypothesis": "y", "label": "neutral"}])
    with pytest.raises(CommandError, match="missing text"):
        call_command(Command(), "sim", str(source), "--heldout", str(source))


def test_the_intervals():
    interval = wilson(30, 100)
    assert interval.value == 0.3 and interval.low == pytest.approx(0.2189, abs=1e-3)
    assert interval.high == pytest.approx(0.3958, abs=1e-3)
    same = paired_bootstrap([1, 0, 1, 0], [1, 0, 1, 0])
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)
    better = paired_bootstrap([1] * 50, [0] * 50)
    assert better.value == -1.0 and better.high == -1.0
