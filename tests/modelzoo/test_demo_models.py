"""The demo tasks' training data and held-out figures (modelzoo.demo, demo_models, evaluate_demo), tiny encoder."""

import json

import pytest
from django.core.management import CommandError, call_command

from modelzoo import demo
from modelzoo.models import ModelVersion
from tests.factories import LabeledItemFactory, RoundFactory, TaskFactory


@pytest.fixture
def sentiment_demo(db):
    task = TaskFactory(slug="sentiment", kind="sentiment")
    RoundFactory(task=task, number=1)
    for i, label in enumerate(["positive", "negative", "neutral"] * 4):
        LabeledItemFactory(task=task, collection="demo", input={"text": f"demo sentence {i}"}, target=label)
    LabeledItemFactory(task=task, collection="demo", split="test", input={"text": "held back"}, target="neutral")
    return task


def test_the_sentiment_demo_trains_on_its_items_and_imported_train_collections_never_held_out_rows(sentiment_demo):
    for i in range(3):
        LabeledItemFactory(task=sentiment_demo, collection="extra", input={"text": f"extra row {i}"}, target="neutral")
    for i in range(8):  # what `load_demo --base-data` imports from SST-2 train
        LabeledItemFactory(task=sentiment_demo, collection="sst2-train-sample", input={"text": f"sst2 row {i}"},
                           target="positive")
    LabeledItemFactory(task=sentiment_demo, collection="sst2-train-sample", split="heldout",
                       input={"text": "the importer's held-out slice"}, target="negative")
    labelled = demo.training_set(sentiment_demo, max_examples=5)
    assert labelled.inputs.count({"text": "demo sentence 0"}) == demo.DEMO_REPEAT
    assert labelled.inputs.count({"text": "extra row 0"}) == 1  # other collections once each
    assert {"text": "held back"} not in labelled.inputs and {"text": "the importer's held-out slice"} not in labelled.inputs
    assert "sst2-train-sample/train (8)" in labelled.name
    assert len(labelled.inputs) == 12 * demo.DEMO_REPEAT + 3 + 5  # each extra collection capped at max_examples


def test_held_out_sets_are_the_standard_evaluation_splits(db, data_dir):
    qa = TaskFactory(slug="qa", kind="qa")
    (squad,) = demo.held_out_sets(qa)
    assert len(squad.labelled.inputs) == 700  # the 3 SQuAD dev articles, every question
    assert any(t.get("alternatives") for t in squad.labelled.targets)  # dev questions have several answers
    hate = TaskFactory(slug="hate-speech", kind="hate_speech")
    (davidson,) = demo.held_out_sets(hate, limit=300)
    assert len(davidson.labelled.inputs) == 300 and set(davidson.labelled.targets) <= {"hateful", "not hateful"}
    nli = TaskFactory(slug="nli", kind="nli")
    assert len(demo.held_out_sets(nli, limit=50)[0].labelled.inputs) == 50


def test_evaluate_demo_prints_held_out_figures_of_the_deployed_ensemble(sentiment_demo, data_dir, tmp_path, capsys):
    with pytest.raises(CommandError, match="nothing to evaluate"):
        call_command("evaluate_demo", "--tasks", "sentiment")
    call_command("demo_models", "--tasks", "sentiment", "--members", "2", "--encoder", "tiny", "--max-steps", "5",
                 "--max-examples", "40", "--no-progress", "--opponent-rows", "0")
    assert ModelVersion.objects.filter(task=sentiment_demo, status="deployed").count() == 2
    out = tmp_path / "figures.json"
    call_command("evaluate_demo", "--tasks", "sentiment", "--json", str(out))
    printed = capsys.readouterr().out
    assert "| sentiment | sst2/dev | 872 | 2 members | accuracy " in printed
    (row,) = json.loads(out.read_text())
    assert set(row["metrics"]) == {"accuracy", "macro_f1", "accuracy_all_labels"}
    assert 0.0 <= row["metrics"]["accuracy"] <= 1.0


def test_a_task_with_only_its_demo_items_gets_the_earlier_full_recipe(db, tmp_path):
    task = TaskFactory(slug="nli", kind="nli")
    RoundFactory(task=task, number=1)
    for i, label in enumerate(["entailment", "neutral", "contradiction"] * 2):
        LabeledItemFactory(task=task, collection="demo", context={"premise": f"A dog runs {i}."},
                           input={"hypothesis": f"An animal moves {i}."}, target=label)
    call_command("demo_models", "--tasks", "nli", "--members", "1", "--encoder", "tiny", "--epochs", "1",
                 "--no-progress")
    version = ModelVersion.objects.get(task=task)
    assert version.status == "deployed" and version.lineage == {"data": "demo/train", "examples": 6, "encoder": "tiny",
                                                            "start_from": "pretrained"}
    assert version.hyperparameters["epochs"] == 1 and "top_layers" not in version.hyperparameters


def test_nli_with_its_imported_base_data_trains_cached_top_with_the_nli_kinds_own_settings(db):
    from tasks.kinds.nli import NLIKind

    task = TaskFactory(slug="nli", kind="nli")
    RoundFactory(task=task, number=1)
    labels = ["entailment", "neutral", "contradiction"]
    for i in range(6):
        LabeledItemFactory(task=task, collection="demo", context={"premise": f"A dog runs {i}."},
                           input={"hypothesis": f"An animal moves {i}."}, target=labels[i % 3])
    for i in range(45):  # what `load_demo --base-data` imports from SNLI dev
        LabeledItemFactory(task=task, collection="snli-dev", context={"premise": f"A man plays guitar {i}."},
                           input={"hypothesis": f"Someone makes music {i}."}, target=labels[i % 3])
    call_command("demo_models", "--tasks", "nli", "--members", "1", "--encoder", "tiny", "--max-steps", "3",
                 "--no-progress")
    version = ModelVersion.objects.get(task=task)
    assert version.status == "deployed" and version.lineage["examples"] == 6 * demo.DEMO_REPEAT + 45
    settings = version.hyperparameters
    assert settings["recipe"] == "cached-top" and settings["max_steps"] == 3  # the command's option on top
    # the kind's settings, not the demo's pins for the other classifiers (DEMO_RECIPE)
    assert {k: settings[k] for k in NLIKind.recipe_defaults if k != "max_steps"} == {
        k: v for k, v in NLIKind.recipe_defaults.items() if k != "max_steps"}
