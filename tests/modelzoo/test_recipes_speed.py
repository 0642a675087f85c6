"""What makes closing a round fast without changing its results: length-bucketed training batches, and the
members' shared frozen layers run once when an ensemble is evaluated (zoo.recipes, rounds.evaluation; the
sharing itself, and its refusal for members that differ, is tested in test_trunk_sharing.py)."""

import torch

from modelzoo import data, ensemble_training
from rounds import evaluation
from tests.modelzoo.test_recipes import LABELS, tiny, toy_rows
from zoo import recipes
from zoo.runtime import Predictor
from zoo.training import TrainExample


def varied_rows(n: int) -> list[TrainExample]:
    """Rows of very different lengths (as SST-2 phrases are)."""
    rows = toy_rows(n)
    return [TrainExample({"text": r.model_input["text"] + " and so on" * (i % 9)}, r.target) for i, r in enumerate(rows)]


def test_bucketed_batches_cover_every_row_once_with_little_padding():
    lengths = [(i * 37) % 60 + 1 for i in range(1000)]
    batches = recipes.length_bucketed_batches(lengths, 16, torch.Generator().manual_seed(0))
    assert sorted(i for b in batches for i in b) == list(range(1000))
    assert all(1 <= len(b) <= 16 for b in batches)
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    perm = torch.randperm(1000, generator=torch.Generator().manual_seed(0)).tolist()
    random_padded = sum(len(perm[s:s + 16]) * max(lengths[i] for i in perm[s:s + 16]) for s in range(0, 1000, 16))
    assert padded < 0.7 * random_padded
    again = recipes.length_bucketed_batches(lengths, 16, torch.Generator().manual_seed(0))
    other = recipes.length_bucketed_batches(lengths, 16, torch.Generator().manual_seed(1))
    assert again == batches and other != batches  # fixed by the seed; the order changes with it


def test_members_trained_on_bucketed_batches_still_learn(tmp_path):
    recipes.train_ensemble(toy_rows(96), tiny(bucket_batches=50), [tmp_path / "a"], [0])
    held_out = toy_rows(40, offset=500)  # unseen sentences, same words
    predictions = Predictor.load(tmp_path / "a").predict([r.model_input for r in held_out])
    assert sum(p["label"] == r.target for p, r in zip(predictions, held_out, strict=True)) / len(held_out) >= 0.8


def test_evaluation_of_an_ensemble_with_a_shared_trunk_matches_each_model_alone(open_round, settings):
    settings.MODEL_BACKEND = "inprocess"
    task = open_round.task
    task.config = {"labels": LABELS}
    task.save()
    rows = varied_rows(64)
    labelled = data.LabelledSet("toy", [r.model_input for r in rows], [r.target for r in rows],
                                [f"k{i}" for i in range(64)])
    spec = ensemble_training.default_recipe(task, encoder="tiny", max_length=32, lr=3e-3, min_steps=30, top_layers=1)
    versions = ensemble_training.train_ensemble(task, labelled, [0, 1], spec=spec)
    test = varied_rows(90)[64:]
    test_set = data.LabelledSet("round-1/test", [r.model_input for r in test], [r.target for r in test],
                                [f"t{i}" for i in range(len(test))])
    together, alone = evaluation.PredictionCache(), evaluation.PredictionCache()
    together.prefetch(versions, test_set)
    assert all((v.pk, "round-1/test") in together.predictions for v in versions)  # predicted together
    for version in versions:
        got, expected = together.get(version, test_set), alone.get(version, test_set)
        assert [p["label"] for p in got] == [p["label"] for p in expected]
        assert together.timing[version.pk][0] == len(test)
