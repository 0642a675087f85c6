"""Where each round's retraining starts (retraining.start_from, the pipeline's start_from option): "pretrained"
members are built from the encoder, "live" members from the live ensemble's member (its weights carry over)."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from modelzoo import data, encoders, ensemble_training
from modelzoo.models import ModelVersion
from rounds.options import BadOptions, pipeline_options
from tests.factories import RoundFactory, TaskFactory
from zoo import training

LABELS = ["negative", "positive"]


def rows(n: int) -> data.LabelledSet:
    inputs = [{"text": f"{'great' if i % 2 else 'awful'} film {i}"} for i in range(n)]
    return data.LabelledSet("toy", inputs, [LABELS[i % 2] for i in range(n)], [f"k{i}" for i in range(n)])


@pytest.fixture
def live_task(db):
    """A task whose round 1 has a live ensemble of two tiny members."""
    from modelzoo.services import deploy_ensemble

    task = TaskFactory(slug="start", kind="sentiment", config={"labels": LABELS})
    round_ = RoundFactory(task=task, number=1)
    live = ensemble_training.train_ensemble(task, rows(16), [0, 1], recipe="full", names=["live-0", "live-1"],
                                            full_overrides={"encoder": "tiny", "epochs": 1, "max_length": 16})
    deploy_ensemble(round_, live)
    return task, live


def captured_starts(monkeypatch) -> list[dict[str, torch.Tensor]]:
    """The state each member's training begins from (the full recipe's `fit`)."""
    seen: list[dict[str, torch.Tensor]] = []
    real = training.fit

    def fit(model, *args, **kwargs):
        seen.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        return real(model, *args, **kwargs)

    monkeypatch.setattr(training, "fit", fit)
    return seen


def test_the_option_is_validated_and_the_run_wins_over_the_task(live_task):
    task, _ = live_task
    with pytest.raises(BadOptions, match="start_from"):
        pipeline_options({"start_from": "scratch"})
    assert pipeline_options({"start_from": "live"}).start_from == "live"
    assert encoders.start_from_for(task) == "pretrained"  # the default: what retraining always did
    task.config = {"labels": LABELS, "retraining": {"start_from": "live"}}
    task.save()
    assert encoders.start_from_for(task) == "live"
    assert encoders.start_from_for(task, "pretrained") == "pretrained"
    with pytest.raises(Exception, match="start_from"):
        task.config = {"labels": LABELS, "retraining": {"start_from": "scratch"}}
        task.save()


def test_live_members_start_from_the_live_members_weights(live_task, monkeypatch):
    task, live = live_task
    seen = captured_starts(monkeypatch)
    new = ensemble_training.train_ensemble(task, rows(20), [0, 1], recipe="full", names=["new-0", "new-1"],
                                           start_from="live",
                                           full_overrides={"encoder": "tiny", "epochs": 1, "max_length": 16})
    assert len(seen) == 2
    for start, member in zip(seen, live, strict=True):
        weights = load_file(str(member.artifact_path / "model.safetensors"))
        assert set(weights) <= set(start)
        for name, tensor in weights.items():  # every weight, the head's included, is the live member's
            assert torch.equal(start[name], tensor), name
    assert [v.lineage["start_from"] for v in new] == ["live", "live"]
    assert [v.lineage["started_from"]["model_version"] for v in new] == [v.pk for v in live]
    assert [v.parent_id for v in new] == [v.pk for v in live]
    assert all(v.status == ModelVersion.Status.READY for v in new)


def test_pretrained_members_start_from_the_encoder(live_task, monkeypatch):
    task, live = live_task
    seen = captured_starts(monkeypatch)
    new = ensemble_training.train_ensemble(task, rows(20), [0], recipe="full", names=["fresh-0"],
                                           start_from="pretrained",
                                           full_overrides={"encoder": "tiny", "epochs": 1, "max_length": 16})
    (start,) = seen
    weights = load_file(str(live[0].artifact_path / "model.safetensors"))
    assert any(not torch.equal(start[name], tensor) for name, tensor in weights.items())  # not the live member
    training.seed_everything(0)  # the same seed builds the same fresh model from the encoder
    fresh = training.build_model(training.TrainSpec(head="classification", labels=LABELS, encoder="tiny",
                                                    max_length=16, epochs=1, seed=0))
    for name, tensor in fresh.state_dict().items():
        assert torch.equal(start[name], tensor), name
    assert new[0].lineage["start_from"] == "pretrained" and new[0].lineage["encoder"] == "tiny"


def test_cached_top_live_members_start_from_the_live_encoder(live_task, monkeypatch):
    from zoo import recipes

    task, live = live_task
    seen: list[dict[str, torch.Tensor]] = []
    real = recipes._fit_member

    def fit_member(model, *args, **kwargs):
        seen.append({k: v.detach().clone() for k, v in model.base_model.state_dict().items()})
        return real(model, *args, **kwargs)

    monkeypatch.setattr(recipes, "_fit_member", fit_member)
    spec = ensemble_training.default_recipe(task, encoder="tiny", max_length=16, min_steps=3, max_steps=3,
                                            top_layers=1)
    new = ensemble_training.train_ensemble(task, rows(20), [0, 1], spec=spec, start_from="live")
    assert len(seen) == 2
    for start, member in zip(seen, live, strict=True):
        weights = load_file(str(member.artifact_path / "model.safetensors"))
        prefix = next(iter(k.split(".")[0] for k in weights if k.endswith("embeddings.word_embeddings.weight")))
        encoder_weights = {k[len(prefix) + 1:]: v for k, v in weights.items() if k.startswith(prefix + ".")}
        for name, tensor in encoder_weights.items():  # the live member's encoder, every layer
            if name in start:
                assert torch.equal(start[name], tensor), name
    assert [v.lineage["started_from"]["name"] for v in new] == ["live-0", "live-1"]
    assert all(v.hyperparameters["encoder"] == str(m.artifact_path.resolve()) for v, m in zip(new, live, strict=True))


def test_live_without_a_live_ensemble_starts_from_the_encoder(db):
    task = TaskFactory(slug="first", kind="sentiment", config={"labels": LABELS})
    (version,) = ensemble_training.train_ensemble(task, rows(16), [0], recipe="full", start_from="live",
                                                  full_overrides={"encoder": "tiny", "epochs": 1, "max_length": 16})
    assert version.lineage["start_from"] == "pretrained" and version.hyperparameters["encoder"] == "tiny"
