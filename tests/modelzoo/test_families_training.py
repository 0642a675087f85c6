"""Every encoder family trains (both recipes, both heads), saves, loads and predicts; the family table's trunk and
tail views compose to the full model; members sharing a frozen trunk predict what each predicts alone; ALBERT
(which cannot be split) is trained whole and runs alone. Tiny random checkpoints made in code (zoo.tiny)."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForQuestionAnswering, AutoModelForSequenceClassification

from zoo import device as devices
from zoo import families, recipes, tiny, training
from zoo.encoders import FAMILIES
from zoo.runtime import Predictor
from zoo.training import TrainExample
from zoo.trunk import SharedEnsemble

LABELS = ["negative", "positive"]
CONTEXT = "The tower was completed in 1889 and stands in Paris near the river."
ROWS = [TrainExample({"text": f"{'lovely' if i % 2 else 'awful'} film number {i}"}, LABELS[i % 2]) for i in range(16)]
QA_ROWS = [TrainExample({"question": q, "context": CONTEXT}, {"text": a, "start": CONTEXT.index(a)})
           for q, a in [("When was it completed?", "1889"), ("Where does it stand?", "Paris"),
                        ("What is it near?", "the river"), ("What was completed?", "The tower")]] * 3
DATA = {"classification": (ROWS, LABELS), "qa": (QA_ROWS, [])}
PROBES = {"classification": [{"text": "lovely film"}, {"text": "an awful, awful film number 3"}],
          "qa": [{"question": "When was it completed?", "context": CONTEXT},
                 {"question": "Where?", "context": "It stands in Rome."}]}


def train_with(recipe: str, head: str, encoder: str, out, seeds=(1,), device=None) -> list[dict]:
    rows, labels = DATA[head]
    if recipe == recipes.FULL:
        return [training.train(rows, training.TrainSpec(head=head, labels=labels, encoder=encoder, max_length=48,
                                                        epochs=1, batch_size=8, seed=seed), out / f"m{seed}",
                               device=device)
                for seed in seeds]
    spec = recipes.RecipeSpec(head=head, labels=labels, encoder=encoder, max_length=48, top_layers=1, min_steps=4,
                              max_steps=4, batch_size=8, lr=1e-3)
    return recipes.train_ensemble(rows, spec, [out / f"m{seed}" for seed in seeds], list(seeds), device=device)


def check_predictions(head: str, predictions: list[dict]) -> None:
    assert len(predictions) == len(PROBES[head])
    for probe, prediction in zip(PROBES[head], predictions, strict=True):
        if head == "classification":
            assert prediction["label"] in LABELS
            assert sum(prediction["probs"].values()) == pytest.approx(1.0, abs=1e-4)
        else:
            assert 0 <= prediction["start"] <= prediction["end"] <= len(probe["context"])
            assert prediction["text"] == probe["context"][prediction["start"]:prediction["end"]]


def check_artifact(folder, family: str, encoder_name: str) -> None:
    zoo_json = json.loads((folder / "zoo.json").read_text())
    record = json.loads((folder / "training.json").read_text())
    assert zoo_json["encoder_family"] == family and record["encoder"]["family"] == family
    assert record["encoder"]["name"] == encoder_name
    assert record["device"]["device"] == "cpu"
    assert json.loads((folder / "config.json").read_text())["model_type"] == family


@pytest.mark.parametrize("recipe", [recipes.CACHED_TOP, recipes.FULL])
@pytest.mark.parametrize("head", ["classification", "qa"])
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_trains_saves_and_predicts(family, head, recipe, tmp_path):
    metrics = train_with(recipe, head, f"tiny-{family}", tmp_path, device="cpu")[0]
    assert metrics["device"]["device"] == "cpu" and metrics["train_loss"] > 0
    if recipe == recipes.CACHED_TOP:
        splits = family != "albert"
        assert metrics["frozen_layers"] == (1 if splits else 0)
        assert ("whole_model" in metrics) is not splits
    check_artifact(tmp_path / "m1", family, f"tiny-{family}")
    predictor = Predictor.load(tmp_path / "m1")
    assert type(predictor.tokenizer).__name__ == type(tiny.tiny_tokenizer(family)).__name__  # the spec's, not MiniLM's
    check_predictions(head, predictor.predict(PROBES[head]))


@pytest.mark.parametrize(("recipe", "head"), [(recipes.CACHED_TOP, "qa"), (recipes.FULL, "classification")])
@pytest.mark.parametrize("family", FAMILIES)
def test_a_local_checkpoint_folder_of_every_family_trains(family, recipe, head, tmp_path):
    folder = tiny.tiny_checkpoint(family, tmp_path / "encoder")
    train_with(recipe, head, str(folder), tmp_path)
    check_artifact(tmp_path / "m1", family, str(folder.resolve()))
    check_predictions(head, Predictor.load(tmp_path / "m1").predict(PROBES[head]))


def _tiny_model(family: str, head: str, **extra) -> torch.nn.Module:
    config = tiny.tiny_config(family)
    config.num_labels = 3 if head == "classification" else 2
    for key, value in extra.items():
        setattr(config, key, value)
    cls = AutoModelForSequenceClassification if head == "classification" else AutoModelForQuestionAnswering
    torch.manual_seed(0)
    return cls.from_config(config).eval()


VIEW_CASES = [(f, {}) for f in FAMILIES] + [("deberta-v2", {"conv_kernel_size": 3})]  # a convolution after layer 0


@pytest.mark.parametrize("head", ["classification", "qa"])
@pytest.mark.parametrize(("family", "extra"), VIEW_CASES, ids=[f + ("-conv" if e else "") for f, e in VIEW_CASES])
def test_trunk_and_tail_views_compose_to_the_whole_model(family, extra, head):
    model = _tiny_model(family, head, **extra)
    if family == "albert":
        assert not families.can_split(model) and "ALBERT" in families.split_problem(model)
        with pytest.raises(ValueError):
            families.tail_view(model, 1)
        return
    assert families.can_split(model) and len(families.layers(model)) == 2
    tokenizer = tiny.tiny_tokenizer(family)
    encoding = tokenizer(["a lovely film about Paris", "awful"], ["it stands near the river", "no"], padding=True,
                         return_tensors="pt")
    args = {k: v for k, v in encoding.items() if k in tokenizer.model_input_names}
    with torch.no_grad():
        whole = model(**args)
        for k in (0, 1):
            hidden = families.trunk_view(model, k)(**args).last_hidden_state
            out = families.tail_view(model, k)(inputs_embeds=hidden, attention_mask=args["attention_mask"])
            for name in ("logits", "start_logits", "end_logits"):
                if getattr(whole, name, None) is not None:
                    torch.testing.assert_close(getattr(out, name), getattr(whole, name), rtol=0, atol=1e-5)
        after_first = families.trunk_view(model, 1)(**args).last_hidden_state
        last = families.run_layers(model, after_first, args["attention_mask"], 1)
        torch.testing.assert_close(last, model.base_model(**args).last_hidden_state, rtol=0, atol=1e-5)
    assert not any(p.grad is not None for p in model.parameters())  # views changed nothing


@pytest.mark.parametrize("head", ["classification", "qa"])
@pytest.mark.parametrize("family", FAMILIES)
def test_members_sharing_a_trunk_predict_as_each_alone(family, head, tmp_path):
    train_with(recipes.CACHED_TOP, head, f"tiny-{family}", tmp_path, seeds=(1, 2, 3))
    members = [Predictor.load(tmp_path / f"m{s}") for s in (1, 2, 3)]
    ensemble = SharedEnsemble(members, share=True)
    if family == "albert":  # trained whole: nothing shared, each member runs its own forward
        assert ensemble.describe() == [([0], 0), ([1], 0), ([2], 0)]
    else:
        assert ensemble.describe() == [([0, 1, 2], 1)]
    shared = ensemble.predict(PROBES[head])
    alone = [m.predict(PROBES[head]) for m in members]
    for got, expected in zip(shared, alone, strict=True):
        check_predictions(head, got)
        for g, e in zip(got, expected, strict=True):
            if head == "classification":
                assert g["label"] == e["label"]
                for label in LABELS:
                    assert g["probs"][label] == pytest.approx(e["probs"][label], abs=1e-5)
            else:
                assert (g["start"], g["end"]) == (e["start"], e["end"])
                assert g["score"] == pytest.approx(e["score"], abs=1e-5)


def test_albert_members_are_trained_whole_and_the_others_keep_their_trunk(tmp_path):
    base_state = {}
    for family in ("albert", "deberta-v2"):
        train_with(recipes.CACHED_TOP, "classification", f"tiny-{family}", tmp_path / family)
        model = Predictor.load(tmp_path / family / "m1").model
        training.seed_everything(0)  # the recipe builds its base model under seed 0
        spec = training.TrainSpec(head="classification", labels=LABELS, encoder=f"tiny-{family}")
        base_state[family] = (training.build_model(spec).state_dict(), model.state_dict())
    before, after = base_state["albert"]
    assert not torch.equal(before["albert.embeddings.word_embeddings.weight"],
                           after["albert.embeddings.word_embeddings.weight"])  # every layer trained
    before, after = base_state["deberta-v2"]
    for name in ("deberta.embeddings.word_embeddings.weight", "deberta.encoder.rel_embeddings.weight",
                 "deberta.encoder.layer.0.attention.self.query_proj.weight"):
        assert torch.equal(before[name], after[name]), name  # the trunk and the shared relative positions: frozen
    assert not torch.equal(before["deberta.encoder.layer.1.attention.self.query_proj.weight"],
                           after["deberta.encoder.layer.1.attention.self.query_proj.weight"])


def test_training_on_cuda_without_cuda_fails_at_start(tmp_path, monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    monkeypatch.setenv("ZOO_DEVICE", "cuda")
    for recipe in (recipes.FULL, recipes.CACHED_TOP):
        with pytest.raises(devices.DeviceError, match="no CUDA"):
            train_with(recipe, "classification", "tiny-bert", tmp_path / recipe)
        assert not (tmp_path / recipe / "m1").exists()


def test_the_cpu_loop_is_the_one_it_was(tmp_path):
    """On the CPU `fit` keeps its float32 loop: a device given as "cpu" and the policy's CPU give the same
    numbers, and the batch size is the asked one."""
    spec = training.TrainSpec(head="classification", labels=LABELS, encoder="tiny", epochs=1, batch_size=8)
    first = training.train(ROWS, spec, tmp_path / "a", device="cpu")
    second = training.train(ROWS, spec, tmp_path / "b", device=torch.device("cpu"))
    assert first["train_loss"] == second["train_loss"] and "batch_size" not in first
    assert devices.batch_size_for(torch.device("cpu"), 8, 10**9) == 8
