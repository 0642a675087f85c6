"""Data maps (dataset cartography): the statistics of constructed training dynamics worked out by hand, the regions,
a tiny training run that records the dynamics of every example, and a round's retraining that stores a map per
member, shows it on the dashboard and gives each trained example its region in the round's export."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from exports import splits
from exports.formats import FORMATS
from exports.streaming import stream_records
from rounds import datamaps, datasets, services
from rounds.models import DataMap, PipelineRun
from zoo import dynamics, recipes, training
from zoo.dynamics import AMBIGUOUS, EASY, HARD, Passes
from zoo.training import TrainExample, TrainingDynamics

LABELS = ["negative", "positive"]


def passes(keys, probs, correct=None) -> Passes:
    out = Passes(list(keys))
    for i, row in enumerate(probs):
        out.add(row, correct[i] if correct else [p > 0.5 for p in row])
    return out


# -- statistics, by hand -----------------------------------------------------------------------------------------


def test_confidence_variability_and_correctness_of_constructed_probabilities():
    # three checkpoints of three examples
    made = dynamics.statistics(passes("abc", [[0.9, 0.2, 0.6], [0.7, 0.4, 0.2], [0.8, 0.0, 1.0]],
                                      [[True, False, True], [True, False, False], [True, False, True]]))
    by = {e.key: e for e in made}
    assert by["a"].confidence == pytest.approx(0.8)
    assert by["a"].variability == pytest.approx((0.02 / 3) ** 0.5)  # population std of 0.9, 0.7, 0.8
    assert by["a"].correctness == 1.0
    assert by["b"].confidence == pytest.approx(0.2) and by["b"].variability == pytest.approx((0.08 / 3) ** 0.5)
    assert by["b"].correctness == 0.0
    assert by["c"].confidence == pytest.approx(0.6)
    assert by["c"].variability == pytest.approx((0.32 / 3) ** 0.5) and by["c"].correctness == pytest.approx(2 / 3)


def test_rows_of_one_key_are_one_example_averaged_at_each_checkpoint():
    # a round's row repeated by its weight: two copies with key "r"
    made = dynamics.statistics(passes(["r", "r", "s"], [[0.2, 0.6, 0.5], [0.8, 1.0, 0.5]]))
    r = next(e for e in made if e.key == "r")
    assert r.rows == 2 and r.confidence == pytest.approx(0.65)  # checkpoints 0.4 and 0.9
    assert r.variability == pytest.approx(0.25) and r.correctness == pytest.approx(0.75)


def test_regions_follow_the_stated_cut():
    # per example (three checkpoints): confidence, variability
    #   a .95 .95 .95: 0.95, 0      b .1 .9 .5: 0.5, 0.327    c .9 .8 .85: 0.85, 0.041
    #   d .2 .0 .1:   0.10, 0.082  e .3 .9 .6: 0.6, 0.245    f .1 .2 .15: 0.15, 0.041
    # the 2/3 quantile of variability is 0.136: b and e are ambiguous; of the rest, confidence < 0.5 is hard
    checkpoints = [[0.95, 0.1, 0.9, 0.2, 0.3, 0.1], [0.95, 0.9, 0.8, 0.0, 0.9, 0.2], [0.95, 0.5, 0.85, 0.1, 0.6, 0.15]]
    made = dynamics.data_map(passes("abcdef", checkpoints))
    assert {e["key"]: e["region"] for e in made.entries} == {
        "a": EASY, "b": AMBIGUOUS, "c": EASY, "d": HARD, "e": AMBIGUOUS, "f": HARD}
    assert made.counts == {EASY: 2, AMBIGUOUS: 2, HARD: 2} and made.checkpoints == 3
    assert made.settings["variability_threshold"] == pytest.approx(0.136, abs=1e-3)
    assert made.settings["confidence_threshold"] == 0.5 and made.settings["ambiguous_quantile"] == pytest.approx(2 / 3, abs=1e-4)
    assert made.settings["rule"].startswith("ambiguous: variability > 0.136")
    # every variability equal (nothing stands out): nothing is ambiguous
    flat = dynamics.data_map(passes("ab", [[0.9, 0.2], [0.9, 0.2]]))
    assert {e["key"]: e["region"] for e in flat.entries} == {"a": EASY, "b": HARD}


def test_members_agreement_is_the_share_of_shared_examples_in_the_same_region():
    seed0 = [{"key": "a", "region": EASY}, {"key": "b", "region": HARD}, {"key": "c", "region": EASY}]
    seed1 = [{"key": "a", "region": EASY}, {"key": "b", "region": AMBIGUOUS}]  # "c" not in both: not counted
    assert dynamics.agreement([seed0, seed1]) == 0.5
    assert dynamics.agreement([seed0]) is None


def test_one_checkpoint_makes_no_map_and_says_why():
    made = dynamics.data_map(passes("ab", [[0.9, 0.1]]))
    assert made.entries == [] and made.counts == {} and made.checkpoints == 1
    assert "1 complete pass" in made.reason and "at least 2" in made.reason and "variability is 0" in made.reason


def test_a_pass_cut_short_is_not_a_checkpoint():
    recorder = TrainingDynamics(["a", "b", "c"])
    logits = torch.tensor([[0.0, 2.0], [2.0, 0.0], [0.0, 0.0]])
    batch = {"labels": torch.tensor([1, 1, 0])}
    for _ in range(2):  # two whole passes
        recorder.begin_pass()
        recorder.record([0, 1, 2], SimpleNamespace(logits=logits), batch)
    recorder.begin_pass()  # the third stops after one batch (early stopping, or the step budget)
    recorder.record([0], SimpleNamespace(logits=logits[:1]), {"labels": batch["labels"][:1]})
    recorder.end_pass()
    assert recorder.passes.checkpoints == 2 and recorder.passes.dropped == 1
    p = torch.softmax(logits, -1)
    assert recorder.passes.probs[0] == pytest.approx([float(p[0, 1]), float(p[1, 1]), 0.5])
    assert recorder.passes.correct[0] == [True, False, True]  # row c: a tie, argmax label 0, its gold label
    made = dynamics.data_map(recorder.passes)
    assert made.settings["passes_dropped"] == 1 and len(made.entries) == 3


# -- a tiny training run -----------------------------------------------------------------------------------------


def rows(n: int) -> list[TrainExample]:
    good, bad = ["wonderful", "superb", "lovely", "brilliant"], ["dreadful", "awful", "horrid", "terrible"]
    return [TrainExample({"text": f"{(good if i % 2 == 0 else bad)[(i // 2) % 4]} film number {i}"},
                         "positive" if i % 2 == 0 else "negative", f"key-{i}") for i in range(n)]


def test_a_tiny_training_run_records_dynamics_for_every_example(tmp_path):
    data = rows(40)
    spec = training.TrainSpec(head="classification", labels=LABELS, encoder="tiny", epochs=3, lr=3e-3,
                              batch_size=16, max_length=32)
    training.train(data, spec, tmp_path / "full")
    made = dynamics.read(tmp_path / "full")
    assert made.checkpoints == 3 and made.reason == ""
    assert [e["key"] for e in made.entries] == [f"key-{i}" for i in range(40)]
    for e in made.entries:
        assert 0 <= e["confidence"] <= 1 and 0 <= e["variability"] <= 0.5 and e["region"] in dynamics.REGIONS
        assert e["correctness"] * 3 == pytest.approx(round(e["correctness"] * 3), abs=1e-3)  # right at k of 3
    assert sum(made.counts.values()) == 40


def test_the_cached_top_recipe_records_complete_passes_and_one_epoch_is_too_few(tmp_path):
    spec = recipes.RecipeSpec(head="classification", labels=LABELS, encoder="tiny", max_length=32, lr=3e-3,
                              min_steps=25, top_layers=1, batch_size=16)
    data = rows(48)  # 3 batches a pass: 25 steps are 8 complete passes and one cut short
    recipes.train_ensemble(data, spec, [tmp_path / "a"], [0], dev=[], keys=[e.key for e in data])
    made = dynamics.read(tmp_path / "a")
    assert made.checkpoints == 8 and made.settings["passes_dropped"] == 1
    assert {e["key"] for e in made.entries} == {e.key for e in data}
    one = training.TrainSpec(head="classification", labels=LABELS, encoder="tiny", epochs=1, max_length=32)
    training.train(data, one, tmp_path / "one")
    assert dynamics.read(tmp_path / "one").entries == []
    assert "1 complete pass" in dynamics.read(tmp_path / "one").reason
    training.train(data, one, tmp_path / "off", dynamics=False)
    assert dynamics.read(tmp_path / "off") is None  # optional: nothing recorded, nothing written


# -- a round's retraining ----------------------------------------------------------------------------------------


@pytest.fixture
def owner(db):
    from tests.factories import UserFactory

    return UserFactory(username="cartographer")


def test_a_rounds_retraining_stores_a_map_per_member_shown_on_the_dashboard_and_in_the_export(
        small_task, owner, client):
    small_task.owners.add(owner)
    run = services.start_pipeline(small_task, owner, {"k": 0})  # no hardness seeding: not what this test is about
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE, run.error
    round2 = small_task.rounds.get(number=2)
    maps = list(DataMap.objects.filter(round=round2).order_by("settings__member"))
    retrain = run.steps.get(name="retrain")
    assert [m.model_version_id for m in maps] == retrain.result["versions"]  # one per member (seeds 0 and 1)
    first = maps[0]
    assert first.checkpoints >= 2 and sum(first.counts.values()) == len(first.entries)
    assert "data map over" in retrain.log
    agree = dynamics.agreement([m.entries for m in maps])  # the share of examples both seeds put in one region
    assert first.settings["agreement"] == pytest.approx(agree) and "members put" in retrain.log
    round1 = small_task.rounds.get(number=1)
    ids = datamaps.example_ids(small_task)
    trained = {ids[k] for k in datasets.training_plan(small_task, newest=1).train.keys if k in ids}
    mapped = {e["example_id"]: e["region"] for e in first.entries if e["example_id"] is not None}
    assert trained and set(mapped) == trained  # every round example trained on (not the dev rows) has a region
    client.force_login(owner)
    page = client.get(f"/tasks/{small_task.slug}/dashboard/?round=2").content.decode()
    assert 'id="chart-data-map"' in page and 'id="data-map-counts"' in page
    for region in dynamics.REGIONS:
        assert f'data-region="{region}"><td>{region}</td><td class="num">{first.counts[region]}</td>' in page
    assert f"The 2 members (seeds) put {agree * 100:.1f}% of the examples in the same region" in page
    records = [json.loads(line) for line in b"".join(stream_records(
        small_task, splits.usable(round1), FORMATS["jsonl"])).decode().splitlines()]
    regions = {r["example_id"]: r["data_map_region"] for r in records}
    assert {k: v for k, v in regions.items() if v is not None} == mapped
    assert all(regions[pk] is None for pk in regions if pk not in trained)  # dev and test rows: never trained on


def test_a_retraining_of_one_epoch_shows_no_map_and_says_why(small_task, owner, client):
    small_task.owners.add(owner)
    run = services.start_pipeline(small_task, owner, {"k": 0, "recipe": "full", "epochs": 1})
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE, run.error
    maps = DataMap.objects.filter(round__task=small_task, round__number=2)
    assert maps.count() == 2 and all(m.entries == [] and m.checkpoints == 1 for m in maps)
    client.force_login(owner)
    page = client.get(f"/tasks/{small_task.slug}/dashboard/?round=2").content.decode()
    assert 'id="chart-data-map"' not in page
    assert "No data map for round 2: the training made 1 complete pass over its data; a data map needs at least 2" in page
    records = b"".join(stream_records(small_task, splits.usable(small_task.rounds.get(number=1)), FORMATS["jsonl"]))
    assert {json.loads(line)["data_map_region"] for line in records.decode().splitlines()} == {None}
