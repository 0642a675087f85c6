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


def test_the_sentiment_demo_trains_on_its_items_and_sst2_train_never_on_dev(sentiment_demo, data_dir):
    for i in range(3):
        LabeledItemFactory(task=sentiment_demo, collection="extra", input={"text": f"extra row {i}"}, target="neutral")
    labelled = demo.training_set(sentiment_demo, max_examples=200)
    assert labelled.inputs.count({"text": "demo sentence 0"}) == demo.DEMO_REPEAT
    assert labelled.inputs.count({"text": "extra row 0"}) == 1  # other collections once each
    assert {"text": "held back"} not in labelled.inputs
    assert "sst2/train sample (200)" in labelled.name and len(labelled.inputs) == 12 * demo.DEMO_REPEAT + 3 + 200
    dev = {json.loads(line)["sentence"] for line in (data_dir / "sst2" / "dev.jsonl").open()}
    assert not dev & {i["text"] for i in labelled.inputs}


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
                 "--max-examples", "40", "--no-progress")
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
    assert version.status == "deployed" and version.lineage == {"data": "demo/train", "examples": 6}
    assert version.hyperparameters["epochs"] == 1 and "top_layers" not in version.hyperparameters
