"""The cached-top training recipe (zoo.recipes) and the ensemble service over it, with the tiny encoder."""

import json

import pytest
from safetensors.torch import load_file

from modelzoo import data, ensemble_training
from modelzoo.models import ModelVersion
from modelzoo.services import predict_with
from zoo import recipes
from zoo.runtime import Predictor
from zoo.training import TrainExample

LABELS = ["negative", "positive"]
GOOD = ["wonderful", "superb", "lovely", "brilliant"]
BAD = ["dreadful", "awful", "horrid", "terrible"]


def toy_rows(n: int, offset: int = 0) -> list[TrainExample]:
    """A separable set: the label is given by one word."""
    rows = []
    for i in range(offset, offset + n):
        good = i % 2 == 0
        word = (GOOD if good else BAD)[(i // 2) % 4]
        rows.append(TrainExample({"text": f"{word} film number {i}"}, "positive" if good else "negative"))
    return rows


def tiny(**overrides) -> recipes.RecipeSpec:
    base = {"head": "classification", "labels": LABELS, "encoder": "tiny", "max_length": 32, "lr": 3e-3,
            "min_steps": 80, "top_layers": 1, "batch_size": 16}
    return recipes.RecipeSpec(**{**base, **overrides})


def accuracy(path, rows) -> float:
    predictions = Predictor.load(path).predict([r.model_input for r in rows])
    return sum(p["label"] == r.target for p, r in zip(predictions, rows, strict=True)) / len(rows)


def test_the_recipe_writes_loadable_members_that_beat_chance_on_held_out_rows(tmp_path):
    steps = []
    metrics = recipes.train_ensemble(toy_rows(96), tiny(), [tmp_path / "a", tmp_path / "b"], [0, 1],
                                     progress=lambda done, total, stats: steps.append((done, total)))
    for name in ("a", "b"):
        files = {p.name for p in (tmp_path / name).iterdir()}
        assert {"model.safetensors", "config.json", "tokenizer.json", "zoo.json", "training.json", "metrics.json"} <= files
        assert accuracy(tmp_path / name, toy_rows(40, offset=500)) >= 0.8  # unseen sentences, same words
    assert steps[-1][0] == steps[-1][1]  # progress ends at 100 %
    assert metrics[0]["frozen_layers"] == 1 and metrics[0]["dev_examples"] > 0
    training = json.loads((tmp_path / "a" / "training.json").read_text())
    assert training["spec"]["seed"] == 0 and training["recipe"]["name"] == "cached-top"


def test_members_share_the_frozen_layers_and_differ_by_seed(tmp_path):
    recipes.train_ensemble(toy_rows(48), tiny(min_steps=10), [tmp_path / "a", tmp_path / "b"], [0, 1])
    a, b = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    lower = [k for k in a if ".embeddings." in k or ".layer.0." in k]
    upper = [k for k in a if ".layer.1." in k or "classifier" in k]
    assert lower and upper
    assert all(a[k].equal(b[k]) for k in lower)  # complete models: the frozen part is saved too, unchanged
    assert not all(a[k].equal(b[k]) for k in upper)


def test_the_same_seed_gives_the_same_member(tmp_path):
    recipes.train_ensemble(toy_rows(48), tiny(min_steps=10), [tmp_path / "a"], [3])
    recipes.train_ensemble(toy_rows(48), tiny(min_steps=10), [tmp_path / "b"], [3])
    a, b = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert all(a[k].equal(b[k]) for k in a)


def test_early_stopping_ends_training_when_the_dev_loss_stops_improving(tmp_path):
    # Labels that no text predicts: the dev loss cannot improve for long.
    rows = [TrainExample({"text": f"same words {i}"}, LABELS[(i * 7919) % 3 % 2]) for i in range(120)]
    metrics = recipes.train_ensemble(rows, tiny(min_steps=400, max_steps=400, evals=40, patience=2, lr=1e-2),
                                     [tmp_path / "a"], [0])[0]
    assert metrics["stopped_early"] is True
    assert metrics["steps"] < metrics["planned_steps"] == 400
    assert min(metrics["dev_losses"]) == pytest.approx(metrics["dev_loss"], abs=1e-4)  # the best is kept


def test_the_dev_split_is_carved_from_train_data_stably():
    rows, keys = toy_rows(100), [f"k{i}" for i in range(100)]
    train, dev = recipes.carve_dev(rows, keys, tiny())
    again = recipes.carve_dev(rows, keys, tiny())
    assert len(dev) == 10 and len(train) == 90 and [r.model_input for r in dev] == [r.model_input for r in again[1]]
    assert not {r.model_input["text"] for r in dev} & {r.model_input["text"] for r in train}
    assert recipes.carve_dev(toy_rows(20), None, tiny())[1] == []  # too small to spare a dev split


def test_steps_scale_with_the_data():
    spec = tiny(min_steps=150, epochs=3, max_steps=2000, batch_size=16)
    assert recipes.plan_steps(60, spec) == 150  # a few dozen rows: many passes
    assert recipes.plan_steps(1600, spec) == 300  # 3 passes
    assert recipes.plan_steps(100000, spec) == 2000  # capped


def test_qa_members_learn_a_memorised_span(tmp_path):
    passages = [
        ("The Eiffel Tower was completed in 1889 and stands in Paris.", "When was it completed?", "1889"),
        ("Marie Curie won the Nobel Prize in Physics in 1903 with Pierre Curie.", "Who won the prize with her?",
         "Pierre Curie"),
        ("The river Tell flows past Marrowick before it reaches the sea at Carrow.", "Where does the river reach the sea?",
         "Carrow"),
        ("Wool made the town rich, and forty weaving shops stood there by 1550.", "What made the town rich?", "Wool"),
    ]
    rows = [TrainExample({"question": q, "context": c}, {"text": a, "start": c.index(a)}) for c, q, a in passages] * 6
    spec = recipes.RecipeSpec(head="qa", labels=[], encoder="tiny", max_length=64, lr=5e-3, min_steps=150,
                              top_layers=2, batch_size=8, dev_min_train=1000)
    recipes.train_ensemble(rows, spec, [tmp_path / "qa"], [0])
    predictions = Predictor.load(tmp_path / "qa").predict([{"question": q, "context": c} for c, q, _ in passages])
    from tasks.kinds.qa import f1_score

    f1 = sum(f1_score(p["text"], a) for p, (_, _, a) in zip(predictions, passages, strict=True)) / len(passages)
    assert f1 > 0.5, predictions


def test_the_ensemble_service_registers_ready_versions_with_progress(open_round):
    task = open_round.task
    rows = toy_rows(64)
    labelled = data.LabelledSet("toy", [r.model_input for r in rows], [r.target for r in rows],
                                [f"k{i}" for i in range(64)])
    task.config = {"labels": LABELS}
    task.save()
    spec = ensemble_training.default_recipe(task, encoder="tiny", max_length=32, lr=3e-3, min_steps=100, top_layers=1,
                                              patience=8)  # the tiny random encoder learns late: no early stop
    seen = []
    versions = ensemble_training.train_ensemble(task, labelled, [0, 1], spec=spec,
                                                echo=lambda d, t, s: seen.append(d / t))
    assert [v.status for v in versions] == [ModelVersion.Status.READY] * 2
    assert all(v.progress == 1.0 and v.lineage["recipe"] == "cached-top" for v in versions)
    assert seen[-1] == 1.0
    held_out = toy_rows(20, offset=300)
    predictions = predict_with(versions, [r.model_input for r in held_out])
    assert sum(p["label"] == r.target for p, r in zip(predictions, held_out, strict=True)) >= 16
    again = ensemble_training.train_ensemble(task, labelled, [0, 1], spec=spec)  # same data and settings: reused
    assert [v.pk for v in again] == [v.pk for v in versions]


def test_members_left_training_by_a_stopped_run_are_marked_failed_on_the_next(open_round):
    task = open_round.task
    task.config = {"labels": LABELS}
    task.save()
    rows = toy_rows(16)
    labelled = data.LabelledSet("toy", [r.model_input for r in rows], [r.target for r in rows],
                                [f"k{i}" for i in range(16)])
    spec = ensemble_training.default_recipe(task, encoder="tiny", max_length=32, min_steps=5)
    fp = ensemble_training.member_fingerprint(task, spec, 0, labelled.keys)
    stale = ModelVersion.objects.create(task=task, version=1, name="stopped", head="classification",
                                        status="training", progress=0.4, fingerprint=fp)
    (version,) = ensemble_training.train_ensemble(task, labelled, [0], spec=spec)
    stale.refresh_from_db()
    assert version.status == "ready" and stale.status == "failed" and "interrupted" in stale.error


def test_the_full_recipe_stays_available(open_round):
    task = open_round.task
    rows = toy_rows(16)
    labelled = data.LabelledSet("toy", [r.model_input for r in rows], [r.target for r in rows],
                                [f"k{i}" for i in range(16)])
    task.config = {"labels": LABELS}
    task.save()
    versions = ensemble_training.train_ensemble(task, labelled, [0], recipe="full",
                                                full_overrides={"encoder": "tiny", "epochs": 1, "max_length": 32})
    assert versions[0].status == ModelVersion.Status.READY and versions[0].hyperparameters["epochs"] == 1


@pytest.mark.integration
def test_the_recipe_with_the_real_encoder_beats_chance_on_sst2_dev(db, data_dir, tmp_path):
    from tests.factories import TaskFactory

    task = TaskFactory(slug="sst2", kind="sentiment", config={"labels": LABELS})
    train_rows = data.jsonl(task, data_dir / "sst2" / "train.jsonl", "sst2")
    examples = [TrainExample(i, t) for i, t in zip(train_rows.inputs[:320], train_rows.targets[:320], strict=True)]
    spec = recipes.RecipeSpec(head="classification", labels=LABELS, max_length=64)
    metrics = recipes.train_ensemble(examples, spec, [tmp_path / "m"], [0], keys=train_rows.keys[:320])[0]
    assert metrics["frozen_layers"] == 3  # all-MiniLM-L6-v2: 6 layers, the top 3 trained
    dev = data.jsonl(task, data_dir / "sst2" / "dev.jsonl", "sst2")
    predictions = Predictor.load(tmp_path / "m").predict(dev.inputs[:200])
    accuracy = sum(p["label"] == t for p, t in zip(predictions, dev.targets[:200], strict=True)) / 200
    assert accuracy > 0.65, (accuracy, metrics)


def test_bfloat16_training_learns_and_saves_a_float32_member(tmp_path, monkeypatch):
    monkeypatch.setattr("zoo.precision.native_bf16", lambda: True)  # as on a CPU with AMX
    spec = tiny(bf16=True)
    assert recipes.training_dtype(spec) is recipes.torch.bfloat16
    recipes.train_ensemble(toy_rows(96), spec, [tmp_path / "a"], [0])
    weights = load_file(tmp_path / "a" / "model.safetensors")
    assert {t.dtype for t in weights.values()} == {recipes.torch.float32}  # autocast: the weights stay float32
    assert accuracy(tmp_path / "a", toy_rows(40, offset=500)) >= 0.8


def test_bfloat16_training_falls_back_to_float32_where_the_cpu_would_emulate_it(monkeypatch):
    monkeypatch.setattr("zoo.precision.native_bf16", lambda: False)
    assert recipes.training_dtype(tiny(bf16=True)) is None
    assert recipes.training_dtype(tiny()) is None


@pytest.mark.django_db
def test_each_head_trains_with_its_own_recipe_defaults_and_settings_come_on_top(settings):
    from tests.factories import TaskFactory

    settings.MODELZOO_RECIPE = {}
    qa = ensemble_training.default_recipe(TaskFactory(slug="qa-recipe", kind="qa"))
    assert (qa.top_layers, qa.lr, qa.bf16) == (6, 1e-4, True)  # all 6 blocks of all-MiniLM-L6-v2
    sentiment = ensemble_training.default_recipe(TaskFactory(slug="sst-recipe", kind="sentiment"))
    assert (sentiment.top_layers, sentiment.bf16) == (recipes.RecipeSpec.top_layers, False)
    assert (sentiment.lr, sentiment.select_on) == (1e-4, "error")  # the round pipeline's measured best
    settings.MODELZOO_RECIPE = {"top_layers": 4}  # a deployment's setting and a caller's override come on top
    assert ensemble_training.default_recipe(TaskFactory(slug="qa-2", kind="qa")).top_layers == 4
    assert ensemble_training.default_recipe(TaskFactory(slug="qa-3", kind="qa"), top_layers=2).top_layers == 2


@pytest.mark.django_db
def test_a_task_kinds_recipe_defaults_come_between_its_heads_and_the_settings(settings, monkeypatch):
    from tasks.kinds.nli import NLIKind
    from tests.factories import TaskFactory

    settings.MODELZOO_RECIPE = {}
    nli = ensemble_training.default_recipe(TaskFactory(slug="nli-recipe", kind="nli"))
    assert NLIKind.recipe_defaults  # NLI's own settings, measured on SNLI (docs/benchmarks/demo.md)
    assert {name: getattr(nli, name) for name in NLIKind.recipe_defaults} == NLIKind.recipe_defaults
    monkeypatch.setattr(NLIKind, "recipe_defaults", {"top_layers": 5, "lr": 3e-4})
    spec = ensemble_training.default_recipe(TaskFactory(slug="nli-2", kind="nli"))
    assert (spec.top_layers, spec.lr, spec.select_on) == (5, 3e-4, "error")  # the kind over the head; the rest: head's
    sentiment = ensemble_training.default_recipe(TaskFactory(slug="sst-kind", kind="sentiment"))
    assert (sentiment.top_layers, sentiment.lr) == (recipes.RecipeSpec.top_layers, 1e-4)  # another kind: untouched
    settings.MODELZOO_RECIPE = {"top_layers": 4}  # a deployment's setting, then a caller's override, on top
    spec = ensemble_training.default_recipe(TaskFactory(slug="nli-3", kind="nli"))
    assert (spec.top_layers, spec.lr) == (4, 3e-4)
    assert ensemble_training.default_recipe(TaskFactory(slug="nli-4", kind="nli"), top_layers=2).top_layers == 2


def test_selecting_on_the_dev_error_keeps_the_checkpoint_with_the_fewest_dev_mistakes(tmp_path):
    metrics = recipes.train_ensemble(toy_rows(96), tiny(select_on="error", evals=10), [tmp_path / "a"], [0])[0]
    assert len(metrics["dev_errors"]) == len(metrics["dev_losses"]) >= 2
    assert metrics["dev_error"] == min(metrics["dev_errors"])  # the kept checkpoint is the most accurate one
    kept = [i for i, e in enumerate(metrics["dev_errors"]) if e == metrics["dev_error"]]
    assert metrics["dev_loss"] == pytest.approx(min(metrics["dev_losses"][i] for i in kept), abs=1e-4)  # ties: loss
    assert accuracy(tmp_path / "a", toy_rows(40, offset=500)) >= 0.8


def test_a_head_without_labels_selects_on_the_dev_loss_and_a_bad_setting_is_refused():
    with pytest.raises(ValueError, match="select_on"):
        tiny(select_on="accuracy")
    assert recipes._better(tiny(select_on="error"), 1.0, None, (2.0, [], None))  # QA: no error rate, the loss
    assert not recipes._better(tiny(select_on="error"), 1.0, 0.2, (2.0, [], 0.1))  # more mistakes, lower loss
    assert recipes._better(tiny(), 1.0, 0.2, (2.0, [], 0.1))  # select_on="loss": the loss decides
