import json

import pytest
from django.core.management import call_command
from safetensors.torch import load_file

from modelzoo import data, services
from modelzoo.models import ModelVersion
from tests.factories import ExampleFactory, LabeledItemFactory, TaskFactory
from zoo.training import TrainExample, TrainSpec, train

TINY = {"encoder": "tiny", "epochs": 1, "lr": 1e-3, "max_length": 32}
ROWS = [TrainExample({"text": f"{word} film number {i}"}, label)
        for i in range(12) for word, label in (("wonderful", "positive"), ("dreadful", "negative"))]


def test_training_writes_a_complete_versioned_artifact(tmp_path):
    spec = TrainSpec(head="classification", labels=["positive", "negative"], **TINY)
    steps = []
    metrics = train(ROWS, spec, tmp_path / "art", progress=lambda s, t, stats: steps.append((s, t)))
    names = {p.name for p in (tmp_path / "art").iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "zoo.json", "label_map.json", "training.json",
            "metrics.json"} <= names
    assert json.loads((tmp_path / "art" / "label_map.json").read_text()) == {"positive": 0, "negative": 1}
    assert json.loads((tmp_path / "art" / "training.json").read_text())["spec"]["seed"] == 0
    assert steps[-1] == (2, 2) and metrics["train_examples"] == 24
    assert not (tmp_path / "art.partial").exists()


def test_training_is_reproducible_with_the_same_seed(tmp_path):
    spec = TrainSpec(head="classification", labels=["positive", "negative"], **TINY)
    train(ROWS, spec, tmp_path / "a")
    train(ROWS, spec, tmp_path / "b")
    a, b = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert all(a[k].equal(b[k]) for k in a)
    train(ROWS, TrainSpec(head="classification", labels=["positive", "negative"], **{**TINY, "seed": 1}), tmp_path / "c")
    c = load_file(tmp_path / "c" / "model.safetensors")
    assert not all(a[k].equal(c[k]) for k in a)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="two labels"):
        TrainSpec(head="classification", labels=["only"])
    with pytest.raises(ValueError, match="head"):
        TrainSpec(head="regression")


def test_the_model_zoo_trains_on_imported_train_items_only(open_round):
    task = open_round.task
    LabeledItemFactory(task=task, split="train", input={"text": "seed row"}, target="positive")
    LabeledItemFactory(task=task, split="test", input={"text": "held out"}, target="negative")
    ExampleFactory(round=open_round, input={"text": "collected"}, consensus="verified", split="train")
    labelled = data.training_set(task)  # collected examples come through the round pipeline (rounds.datasets)
    assert [i["text"] for i in labelled.inputs] == ["seed row"] and labelled.name == "*/train"


def test_a_round_split_is_not_a_model_zoo_dataset(open_round):
    with pytest.raises(data.UnknownDataset, match="dataset export"):
        data.load(open_round.task, "round-1/test")


def test_nli_model_inputs_pair_the_premise_with_the_hypothesis(db):
    task = TaskFactory(slug="nli", kind="nli")
    LabeledItemFactory(task=task, context={"premise": "A dog runs."}, input={"hypothesis": "An animal moves."},
                       target="entailment")
    assert data.training_set(task).inputs == [{"text": "A dog runs.", "text_pair": "An animal moves."}]


def test_train_model_service_records_progress_and_evaluates(open_round):
    task = open_round.task
    for i in range(8):
        LabeledItemFactory(task=task, collection="demo", input={"text": f"lovely day {i}"}, target="positive")
        LabeledItemFactory(task=task, collection="demo", split="test", input={"text": f"sad day {i}"}, target="negative")
    demo_test = data.load(task, "demo/test")
    version = services.train_model(task, services.default_spec(task, **TINY), evaluate_on=[demo_test])
    assert version.status == ModelVersion.Status.READY
    assert version.progress == 1.0 and version.metrics["train_examples"] == 8
    assert version.lineage == {"data": "*/train", "examples": 8}
    evaluation = version.evaluations.get()
    assert evaluation.dataset == "demo/test" and evaluation.size == 8
    assert set(evaluation.metrics) == {"accuracy", "macro_f1"}
    again = services.train_model(task, services.default_spec(task, **TINY), reuse=True)
    assert again == version


def test_a_failed_training_is_recorded_as_failed(open_round):
    task = open_round.task
    LabeledItemFactory(task=task, input={"text": "x"}, target="not-a-label")
    with pytest.raises(KeyError):
        services.train_model(task, services.default_spec(task, **TINY))
    version = ModelVersion.objects.get()
    assert version.status == ModelVersion.Status.FAILED
    assert "not-a-label" in version.error


def test_train_model_command_trains_from_jsonl_and_deploys(open_round, tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps({"text": f"row {i}", "label": "positive" if i % 2 else "negative"})
                              for i in range(10)))
    call_command("train_model", "sentiment", "--jsonl", str(path), "--tiny", "--epochs", "1", "--deploy")
    version = ModelVersion.objects.get()
    assert version.status == ModelVersion.Status.DEPLOYED
    assert version.lineage["data"] == f"jsonl:{path}"
    assert services.active_ensemble(open_round).ordered_members() == [version]


def test_qa_training_learns_span_positions(qa_round):
    task = qa_round.task
    passage = "The Eiffel Tower was completed in 1889 and stands in Paris."
    rows = [TrainExample({"question": "When was it completed?", "context": passage}, {"text": "1889", "start": 34})] * 8
    version = services.train_model(task, services.default_spec(task, **{**TINY, "epochs": 3, "max_length": 64}),
                                   data.LabelledSet("inline", [r.model_input for r in rows], [r.target for r in rows],
                                                    [str(i) for i in range(8)]))
    assert version.status == ModelVersion.Status.READY
    assert version.metrics["train_loss"] > 0


@pytest.mark.integration
def test_fine_tuning_the_real_encoder_beats_chance_on_sst2(db, data_dir):
    task = TaskFactory(slug="sst2", kind="sentiment", config={"labels": ["negative", "positive"]})
    train_rows = data.jsonl(task, data_dir / "sst2" / "train.jsonl", "sst2")  # validated like an import
    train_set = data.LabelledSet("sst2-train-320", train_rows.inputs[:320], train_rows.targets[:320], train_rows.keys[:320])
    dev = data.jsonl(task, data_dir / "sst2" / "dev.jsonl", "sst2")
    spec = services.default_spec(task, epochs=2, lr=1e-4, max_length=64)
    version = services.train_model(task, spec, train_set)
    predictions = services.predict_with([version], dev.inputs[:200])
    metrics = task.kind_impl.evaluate(task.typed_config, dev.targets[:200], predictions)
    assert metrics["accuracy"] > 0.65, metrics
