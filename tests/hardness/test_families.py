"""Hardness scoring runs on any encoder family (zoo.encoders), seeding uses the run's stored encoder, and a bad
encoder is refused with the reason.

Every family's tiny random checkpoint (`tiny-<family>`, made in code): the weak classifier trains on the pool, the
loss / gradnorm / gradnorm_deep scores come out finite, one per item, the deep norm equals the naive per-example
backward, the k hardest per label are picked, and the classifier's frozen lower part + trained top compose to the
full model (ALBERT, whose layers are shared, is not split).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from django.core.management import CommandError, call_command

from hardness import scores as score_registry
from hardness import selection
from hardness.classifier import EncoderClassifier, TrainConfig, make_optimizer, train_epoch
from hardness.deep import gradnorm_deep, gradnorm_deep_naive
from hardness.encoding import embed_texts, hidden_size, length_sorted_batches
from hardness.services import scoring_context, weak_encoder
from hardness.weak import fit_weak_classifier
from tasks import choices
from tests.factories import LabeledItemFactory, RoundFactory, TaskFactory
from zoo.encoders import FAMILIES

LABELS = ["negative", "positive"]
GOOD = ["a great and lovely film", "superb acting and a wonderful story", "the best day of the year",
        "bright , warm and funny", "a truly moving picture", "i loved every minute of it"]
BAD = ["an awful and boring mess", "dreadful acting , a bad plot", "the worst film this year",
       "dull , cold and tiresome", "a truly tedious picture", "i hated every minute of it"]
TEXTS = [t for pair in zip(GOOD, BAD, strict=True) for t in pair]
Y = np.array([1, 0] * len(GOOD))


@pytest.fixture(scope="module")
def encoders_by_family():
    torch.set_num_threads(1)
    return {family: weak_encoder(f"tiny-{family}", seed=0) for family in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_trains_the_weak_scorer_and_scores_every_item(family, encoders_by_family):
    encoder, tokenizer = encoders_by_family[family]
    inputs = [{"text": t} for t in TEXTS]
    scorer = fit_weak_classifier(encoder, tokenizer, inputs, Y, LABELS, min_steps=12, seed=0)
    assert scorer.training.steps >= 12 and np.isfinite(scorer.training.loss_after)
    assert scorer.pool_features.shape == (len(TEXTS), hidden_size(encoder))
    for score in (choices.LOSS, choices.GRADNORM, choices.GRADNORM_DEEP):
        values = score_registry.compute(score, scoring_context(scorer, inputs, Y, score))
        assert values.shape == (len(TEXTS),) and np.isfinite(values).all() and (values >= 0).all(), score
        chosen = selection.select("hardest", values, Y, 2)
        assert sorted(Y[chosen].tolist()) == [0, 0, 1, 1]
        for label in (0, 1):  # the chosen ones are the hardest of their label
            mine = np.flatnonzero(label == Y)
            picked = [i for i in chosen if Y[i] == label]
            assert min(values[picked]) >= max(values[np.setdiff1d(mine, picked)])


@pytest.mark.parametrize("family", FAMILIES)
def test_every_familys_deep_gradnorm_equals_the_naive_per_example_backward(family, encoders_by_family):
    encoder, tokenizer = encoders_by_family[family]
    torch.manual_seed(1)
    head = torch.nn.Linear(hidden_size(encoder), 2)
    texts, labels = TEXTS[:6], Y[:6]
    batched = gradnorm_deep(encoder, head, tokenizer, texts, labels, batch_size=4)
    naive = gradnorm_deep_naive(encoder, head, tokenizer, texts, labels)
    np.testing.assert_allclose(batched, naive, rtol=1e-4, atol=1e-6)
    assert (batched > 0).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_encodes_pairs_as_two_segments(family, encoders_by_family):
    encoder, tokenizer = encoders_by_family[family]
    pairs = [("a man plays a guitar", "someone makes music"), ("a dog sleeps", "the cat runs fast")]
    feats = embed_texts(encoder, tokenizer, pairs)
    assert feats.shape == (2, hidden_size(encoder)) and np.isfinite(feats).all()
    deep = gradnorm_deep(encoder, torch.nn.Linear(hidden_size(encoder), 2), tokenizer, pairs, np.array([1, 0]))
    assert np.isfinite(deep).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_the_classifiers_frozen_lower_part_and_top_compose_to_the_full_model(family):
    encoder, tokenizer = weak_encoder(f"tiny-{family}", seed=0)
    model = EncoderClassifier(encoder, 2, trainable_blocks=1).eval()
    if family == "albert":  # one layer group reused at every depth: not split, the whole encoder trains
        assert model.split == 0 and "ALBERT" in model.split_note
        assert all(p.requires_grad for p in encoder.parameters())
    else:
        assert model.split == 1 and not model.split_note
        assert not any(p.requires_grad for p in encoder.embeddings.parameters())
    batch = next(length_sorted_batches(tokenizer, TEXTS, 6))
    with torch.no_grad():
        whole = model.head(embed_mean(encoder, batch))
        split = model(batch.input_ids, batch.attention_mask)
    torch.testing.assert_close(split, whole, rtol=1e-4, atol=1e-5)
    config = TrainConfig(epochs=1, batch_size=6, trainable_blocks=1)
    before = [p.detach().clone() for p in model.parameters() if p.requires_grad]
    train_epoch(model, make_optimizer(model, config), tokenizer, TEXTS, Y, 6, torch.Generator().manual_seed(0))
    after = [p for p in model.parameters() if p.requires_grad]
    assert any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))


def embed_mean(encoder, batch):
    from hardness.encoding import mean_pool

    hidden = encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state
    return mean_pool(hidden, batch.attention_mask)


# --- seeding: the run's encoder, a name or a folder, refused with the reason -----------------------------


def _pool_task(slug: str):
    task = TaskFactory(slug=slug, kind="sentiment", config={"labels": LABELS, "seeding": {"min_steps": 8}})
    for text, y in zip(TEXTS, Y, strict=True):
        LabeledItemFactory(task=task, input={"text": text}, target=LABELS[y])
    return task


@pytest.fixture
def used_encoders(monkeypatch):
    import hardness.services

    names: list[str | None] = []
    real = hardness.services.weak_encoder

    def spy(name=None, seed=0):
        names.append(name)
        return real(name, seed)

    monkeypatch.setattr(hardness.services, "weak_encoder", spy)
    return names


@pytest.mark.django_db
def test_the_pipelines_seed_step_uses_the_runs_stored_encoder_not_the_sites(settings, used_encoders):
    from rounds import steps
    from rounds.context import StepContext
    from rounds.models import PipelineRun, PipelineStep
    from rounds.options import pipeline_options

    task = _pool_task("run-encoder")
    settings.ROUNDS_PIPELINE = {"encoder": "tiny-roberta", "k": 2}
    run = PipelineRun.objects.create(task=task, options=pipeline_options().model_dump(), members=[])
    settings.ROUNDS_PIPELINE = {"encoder": "tiny", "k": 2}  # the site's setting changed after the run started
    step = PipelineStep.objects.create(run=run, name="seed", position=0)
    assert steps.seed(StepContext(run, step)) == {"seeds": 4}
    assert used_encoders == ["tiny-roberta"]
    step.refresh_from_db()
    assert "frozen encoder tiny-roberta" in step.log


@pytest.mark.django_db
def test_rounds_seeding_takes_an_encoder_given_and_the_sites_option_without_a_run(settings, used_encoders):
    from rounds import seeding

    task = _pool_task("given-encoder")
    settings.ROUNDS_PIPELINE = {"encoder": "tiny"}
    rnd = RoundFactory(task=task, number=1)
    assert seeding.seed_round(task, rnd, [], 2, None, lambda _: None, encoder="tiny-distilbert") == 4
    assert seeding.seed_round(task, rnd, [], 2, None, lambda _: None) == 4  # no run opens this round
    assert used_encoders == ["tiny-distilbert", "tiny"]


@pytest.mark.django_db
def test_seed_round_command_takes_an_encoder_folder(tmp_path, used_encoders):
    from zoo.tiny import tiny_checkpoint

    task = _pool_task("folder-encoder")
    RoundFactory(task=task, number=1)
    folder = tiny_checkpoint("electra", tmp_path / "lab-electra")
    call_command("seed_round", "folder-encoder", "1", "--k", "2", "--encoder", str(folder), stdout=__import__("io").StringIO())
    assert used_encoders == [str(folder.resolve())]
    from tasks.models import LabeledItem

    assert LabeledItem.objects.filter(task=task, seed_round__number=1).count() == 4


@pytest.mark.django_db
@pytest.mark.parametrize("encoder, reason", [
    ("no-such-encoder", "unknown encoder 'no-such-encoder'"),
    ("{tmp}/empty", "has no config.json"),
])
def test_seed_round_command_refuses_a_bad_encoder_with_the_reason(tmp_path, encoder, reason, used_encoders):
    task = _pool_task("bad-encoder")
    RoundFactory(task=task, number=1)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match=reason):
        call_command("seed_round", "bad-encoder", "1", "--encoder", encoder.format(tmp=tmp_path))
    assert used_encoders == []


@pytest.mark.django_db
def test_seed_round_command_refuses_cuda_where_there_is_none(monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    task = _pool_task("no-cuda")
    RoundFactory(task=task, number=1)
    monkeypatch.setenv("ZOO_DEVICE", "cuda")
    with pytest.raises(CommandError, match="no CUDA device"):
        call_command("seed_round", "no-cuda", "1", "--encoder", "tiny")


def test_the_hardbench_reproduction_refuses_a_bad_encoder_with_the_reason(capsys):
    from research.hardbench.__main__ import main

    with pytest.raises(SystemExit):
        main(["--encoder", "no-such-encoder"])
    assert "unknown encoder 'no-such-encoder'" in capsys.readouterr().err
