"""`python -m research.simulate_rounds` over several rounds: one writers' file per round, closed in order through the real
pipeline; each round's ensemble on every held-out file (error, 95 % Wilson interval), the exact McNemar test
between consecutive rounds; and no word maps computed while it replays."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotation import jobs
from annotation.models import Example
from annotation.services import Submission, submit
from modelzoo.services import active_ensemble
from research.simulate_rounds.command import Command
from research.simulate_rounds.replay import acknowledge, mcnemar, mcnemar_exact, simulated_user
from rounds.models import PipelineRun
from tasks import roles
from tests.research.test_simulation import _fast, rows, task, write  # noqa: F401 - `task`, `_fast`: fixtures


@pytest.fixture
def maps(monkeypatch):
    """Every word map queued (none should be, while simulating)."""
    queued: list[int] = []
    real = jobs.enqueue_map
    monkeypatch.setattr("annotation.jobs.enqueue_map", lambda example_id, **kw: (queued.append(example_id),
                                                                                real(example_id, **kw)))
    return queued


def test_two_rounds_give_a_row_per_rounds_ensemble_and_paired_tests(task, tmp_path, maps):  # noqa: F811
    first = write(tmp_path / "round1.jsonl", rows(500, 16))
    second = write(tmp_path / "round2.jsonl", rows(600, 16))
    held_a = write(tmp_path / "held_a.jsonl", rows(900, 10))
    held_b = write(tmp_path / "held_b.jsonl", rows(950, 12))
    out, figures = tmp_path / "report.md", tmp_path / "report.json"
    call_command(Command(), "sim", "--writers", str(first), str(second), "--held-out", str(held_a),
                 f"{held_b}:6", "--writer-count", "2", "--validators", "2", "--out", str(out), "--json", str(figures))
    data = json.loads(figures.read_text())
    a, b = str(held_a), str(held_b)
    assert data["heldouts"] == [a, b] and data["heldout_sizes"] == {a: 10, b: 6}  # FILE:6, a sample of 6
    # Two rounds, closed in order through the pipeline: round 1 → 2 → 3.
    assert [(r["number"], r["opened_round"], r["pipeline"]["status"]) for r in data["rounds"]] == [
        (1, 2, "done"), (2, 3, "done")]
    assert [r["submitted"] for r in data["rounds"]] == [16, 16] and data["stopped"] == ""
    assert PipelineRun.objects.filter(task=task, status="done").count() == 2
    assert active_ensemble(task.rounds.get(number=3)) is not None
    # One row per round's ensemble: the live one at the start, then after each closed round.
    assert [(e["round"], e["label"].split(" (")[0]) for e in data["ensembles"]] == [
        (1, "round 1"), (2, "round 2"), (3, "round 3")]
    assert data["ensembles"][0]["label"] == "round 1 (live at start)"
    for row in data["ensembles"]:
        assert row["size"] == {a: 10, b: 6}
        for interval in row["errors"].values():
            assert interval["low"] <= interval["value"] <= interval["high"]
    # Paired tests: 1 → 2, 2 → 3 and first → last, on each held-out file.
    assert sorted((t["heldout"], t["before"], t["after"]) for t in data["tests"]) == sorted(
        (h, i, j) for h in (a, b) for i, j in ((0, 1), (1, 2), (0, 2)))
    for t in data["tests"]:
        n = data["heldout_sizes"][t["heldout"]]
        before, after = (data["ensembles"][k]["errors"][t["heldout"]]["value"] for k in (t["before"], t["after"]))
        assert t["broken"] - t["fixed"] == round((after - before) * n)  # the discordant pairs make the change
        was, now = (data["ensembles"][k]["wrong"][t["heldout"]] for k in (t["before"], t["after"]))
        assert (t["fixed"], t["broken"]) == (sum(w > v for w, v in zip(was, now, strict=True)),
                                             sum(v > w for w, v in zip(was, now, strict=True)))
        assert t["p_value"] == pytest.approx(mcnemar_exact(t["fixed"], t["broken"]))
        assert t["difference"]["value"] == pytest.approx(after - before, abs=1e-3)
    text = out.read_text()
    table = text.split("## Held-out error of each round's ensemble")[1].split("##")[0]
    assert f"| ensemble | members | `{a}` (n = 10) | `{b}` (n = 6) |" in table
    assert table.count("\n| round ") == 3 and "| round 1 (live at start) |" in table and " %) |" in table
    assert "McNemar p" in text and "wrong before only" in text and "wrong after only" in text
    assert "### Round 1 (writers' file" in text and "### Round 2 (writers' file" in text
    assert text.count("The pipeline's comparison") == 2
    # No word maps while replaying: none queued, every example's map "not requested".
    assert maps == []
    examples = Example.objects.filter(round__task=task, round__number__in=[1, 2])
    assert examples.count() == 32 and not examples.filter(fooled__isnull=True).exists()
    assert set(examples.values_list("explanation_state", "explanation_error", "explanation")) == {
        (Example.Map.UNAVAILABLE, jobs.NOT_REQUESTED, None)}
    assert [r["word_maps"] for r in data["rounds"]] == [{"unavailable": 16}, {"unavailable": 16}]


def test_a_writers_submission_still_gets_its_word_map(task, maps):  # noqa: F811
    writer = simulated_user("a-writer", roles.ANNOTATOR)
    acknowledge([writer], task)
    mapped = submit(writer, task, Submission(input={"text": "the film was lovely"}, target="positive",
                                             round_number=1)).example
    quiet = submit(writer, task, Submission(input={"text": "the film was dreadful"}, target="negative",
                                            round_number=1), word_map=False).example
    mapped.refresh_from_db()
    quiet.refresh_from_db()
    assert maps == [mapped.pk]
    assert mapped.explanation_state == Example.Map.READY and mapped.explanation
    assert quiet.scoring_state == Example.Scoring.SCORED and quiet.explanation is None
    assert (quiet.explanation_state, quiet.explanation_error) == (Example.Map.UNAVAILABLE, jobs.NOT_REQUESTED)
    assert jobs.request_map(quiet)  # asked for later, it is computed as any other
    quiet.refresh_from_db()
    assert quiet.explanation_state == Example.Map.READY


@pytest.mark.parametrize(("fixed", "broken", "p"), [
    (0, 10, 0.001953125),  # 2 · ½¹⁰
    (10, 0, 0.001953125),
    (5, 5, 1.0),
    (0, 0, 1.0),  # no discordant pair: no evidence either way
    (3, 12, 0.03515625),  # 2 · (1 + 15 + 105 + 455) / 2¹⁵
    (1, 1, 1.0),
])
def test_the_exact_mcnemar_p_value(fixed, broken, p):
    assert mcnemar(fixed, broken) == pytest.approx(p)
    assert mcnemar_exact(fixed, broken) == pytest.approx(p)


def test_files_in_their_datasets_own_shape_are_read_through_an_import_preset(task, tmp_path):  # noqa: F811
    """DynaSent and SST-2 lines keep their own fields (`sentence`, SST-2's 0/1 labels): `FILE@PRESET` maps them as
    the importer does, so the real datasets replay as they are; a wrong preset or a file without one is refused
    with a message that names the fix."""
    from django.core.management.base import CommandError

    from research.simulate_rounds.command import data_file
    from research.simulate_rounds.replay import SimulationError, read_rows

    dynasent = tmp_path / "r1_dev.jsonl"
    dynasent.write_text("\n".join(json.dumps({"text_id": f"r1-{i}", "sentence": s, "label": label,
                                              "gold_label": label})
                                  for i, (s, label) in enumerate([("The staff were lovely.", "positive"),
                                                                  ("Cold food, rude waiter.", "negative")])) + "\n")
    sst2 = tmp_path / "dev.jsonl"
    sst2.write_text(json.dumps({"idx": 7, "sentence": "a charming journey", "label": 1}) + "\n")
    spec = data_file(f"{dynasent}:1@dynasent")
    assert (spec.path, spec.limit, spec.preset) == (dynasent, 1, "dynasent")
    rows_ = read_rows(task, dynasent, preset="dynasent")
    assert [(r.input, r.target, r.uid) for r in rows_] == [({"text": "The staff were lovely."}, "positive", "r1-0"),
                                                           ({"text": "Cold food, rude waiter."}, "negative", "r1-1")]
    [row] = read_rows(task, sst2, preset=data_file(f"{sst2}@sst2").preset)
    assert (row.input, row.target, row.uid) == ({"text": "a charming journey"}, "positive", "7")
    with pytest.raises(CommandError, match="unknown import preset 'sst3'"):
        data_file(f"{sst2}@sst3")
    with pytest.raises(SimulationError, match="FILE@PRESET"):
        read_rows(task, sst2)  # no `text` field: the message names the preset syntax
    # A line the site would refuse (over its text limit) is left out and said, not replayed nor scored.
    with dynasent.open("a") as handle:
        handle.write(json.dumps({"text_id": "r1-long", "sentence": "word " * 120, "label": "neutral"}) + "\n")
    skipped: list[str] = []
    assert len(read_rows(task, dynasent, preset="dynasent", skipped=skipped)) == 2
    assert len(skipped) == 1 and skipped[0].startswith("line 3: input.text: is ") and "the limit is 500" in skipped[0]
    with pytest.raises(SimulationError, match="1 bad row"):
        read_rows(task, dynasent, preset="dynasent")
