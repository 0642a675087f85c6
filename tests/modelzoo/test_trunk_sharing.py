"""Members that share a frozen trunk compute it once (zoo.trunk): found by comparing tensors, the same
numbers as separate forwards (predictions and occlusion maps), and a separate forward for members that share
nothing (a fully fine-tuned member, an upload)."""

from __future__ import annotations

import pytest
import torch

from tests.modelzoo.trunks import member_artifacts
from zoo import explain, recipes, trunk
from zoo.runtime import Predictor, ensemble
from zoo.serving.base import ModelRef
from zoo.serving.inprocess import InProcessBackend
from zoo.training import TrainExample

LABELS = ["negative", "neutral", "positive"]
# maps are compared with separate forward passes to float precision: occlusion batches in float32 here
pytestmark = pytest.mark.usefixtures("float32_occlusion")

TEXTS = [{"text": "The plot's twists aren't earned, sadly."}, {"text": "A gentle, funny film."},
         {"text": "Dull. Utterly, painfully dull, and twenty minutes too long!"}]
QA = [{"question": "When was it completed?", "context": "The Eiffel Tower was completed in 1889 and is in Paris."},
      {"question": "Who painted the ceiling?", "context": "The ceiling was painted by Michelangelo in 1512."}]


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return [Predictor.load(p) for p in member_artifacts(tmp_path_factory.mktemp("shared"), "classification", LABELS)]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Two cached-top members, one fully fine-tuned, one uploaded model."""
    paths = member_artifacts(tmp_path_factory.mktemp("mixed"), "classification", LABELS, members=4, full=(2,),
                             upload=(3,))
    return [Predictor.load(p) for p in paths]


@pytest.fixture(scope="module")
def readers(tmp_path_factory):
    return [Predictor.load(p) for p in member_artifacts(tmp_path_factory.mktemp("qa"), "qa")]


def count_runs(predictors):
    """How often each member's own embeddings and own last layer ran (its feed-forward output: a classifier's
    last layer may run for the first token alone, `trunk.FirstTokenLayer`, without calling the layer itself)."""
    runs = {"embeddings": [0] * len(predictors), "last": [0] * len(predictors)}
    handles = []
    for i, p in enumerate(predictors):
        base = p.model.base_model
        handles.append(base.embeddings.register_forward_hook(lambda *_, i=i: runs["embeddings"].__setitem__(i, runs["embeddings"][i] + 1)))
        handles.append(base.encoder.layer[-1].output.register_forward_hook(lambda *_, i=i: runs["last"].__setitem__(i, runs["last"][i] + 1)))
    return runs, handles


def assert_same_predictions(a, b):
    assert len(a) == len(b)
    for member_a, member_b in zip(a, b, strict=True):
        for x, y in zip(member_a, member_b, strict=True):
            if "probs" in x:
                assert x["label"] == y["label"]
                assert x["probs"] == pytest.approx(y["probs"], abs=1e-5)
            else:
                assert (x["start"], x["end"], x["text"]) == (y["start"], y["end"], y["text"])
                assert x["score"] == pytest.approx(y["score"], abs=1e-5)


def assert_same_map(a, b):
    assert [w["word"] for w in a["words"]] == [w["word"] for w in b["words"]]
    assert [w["score"] for w in a["words"]] == pytest.approx([w["score"] for w in b["words"]], abs=1e-5)
    assert a["probability"] == pytest.approx(b["probability"], abs=1e-5)
    assert a["peak"] == pytest.approx(b["peak"], abs=1e-5)
    assert a["target"] == b["target"]


def test_cached_top_members_are_found_to_share_embeddings_and_the_frozen_layers(shared):
    assert ensemble(shared).describe() == [([0, 1, 2], 1)]  # tiny encoder: 2 layers, the top one trained
    assert ensemble(shared, share=False).describe() == [([0], 0), ([1], 0), ([2], 0)]
    assert trunk.shared_layers(shared[0], shared[1]) == 1


def test_sharing_is_decided_by_the_tensors_not_by_the_metadata(shared):
    copy = Predictor(__import__("copy").deepcopy(shared[1].model), shared[1].tokenizer, dict(shared[1].meta))
    with torch.no_grad():  # one bit of one embedding weight
        weight = copy.model.base_model.embeddings.word_embeddings.weight
        weight.view(torch.int32)[7, 3] ^= 1
    assert trunk.shared_layers(shared[0], copy) == 0
    assert ensemble([shared[0], copy]).describe() == [([0], 0), ([1], 0)]


def test_shared_trunk_predictions_equal_separate_forwards_and_run_the_trunk_once(shared):
    separate = [p.predict(TEXTS) for p in shared]
    runs, handles = count_runs(shared)
    try:
        together = ensemble(shared).predict(TEXTS)
    finally:
        for h in handles:
            h.remove()
    assert_same_predictions(together, separate)
    assert runs == {"embeddings": [1, 0, 0], "last": [1, 1, 1]}


def test_occlusion_map_through_the_shared_trunk_equals_separate_forwards(shared):
    runs, handles = count_runs(shared)
    try:
        together = explain.explain_ensemble(ensemble(shared), TEXTS[0], "occlusion")
    finally:
        for h in handles:
            h.remove()
    apart = explain.explain_ensemble(ensemble(shared, share=False), TEXTS[0], "occlusion")
    assert runs == {"embeddings": [1, 0, 0], "last": [1, 1, 1]}  # the n+1-row batch: one trunk pass
    assert_same_map(together, apart)
    assert_same_predictions([[p] for p in together["predictions"]], [[p] for p in apart["predictions"]])
    with_target = explain.explain_ensemble(ensemble(shared), TEXTS[2], "occlusion", "positive")
    assert_same_map(with_target, explain.explain_ensemble(ensemble(shared, share=False), TEXTS[2], "occlusion", "positive"))


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_a_classifiers_last_layer_runs_for_the_first_token_alone_with_the_same_logits(shared, attention):
    """The pooler reads [CLS] only, so the tails' last layer computes [CLS] alone: the same logits as the whole
    layer, on a batch with padding (rows of different lengths), and a last hidden state of one token."""
    model = __import__("copy").deepcopy(shared[0].model)
    model.set_attn_implementation(attention)
    assert model.config._attn_implementation == attention
    assert trunk.reads_first_token_only(model)
    encoding = shared[0].encode(TEXTS)
    args = shared[0].model_args(encoding)
    assert int(args["attention_mask"].sum(1).min()) < args["attention_mask"].shape[1]  # some rows are padded
    with torch.inference_mode():
        hidden = trunk.trunk_view(model, 1)(**args).last_hidden_state
        rest = {"inputs_embeds": hidden, "attention_mask": args["attention_mask"]}
        pruned = trunk.tail_view(model, 1, first_token=True)(**rest)
        last = trunk.tail_view(model, 1, first_token=True).base_model(**rest).last_hidden_state
        whole = trunk.tail_view(model, 1, first_token=False)(**rest)
        stock = model(**args).logits
    assert isinstance(trunk.tail_view(model, 1, first_token=True).base_model.encoder.layer[-1], trunk.FirstTokenLayer)
    assert last.shape[:2] == (len(TEXTS), 1)
    torch.testing.assert_close(pruned.logits, whole.logits, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(pruned.logits, stock, atol=1e-6, rtol=1e-5)


def test_the_first_token_layer_is_kept_for_classifiers_only(shared, readers, monkeypatch):
    assert not trunk.reads_first_token_only(readers[0].model)  # QA reads every token's start and end logits
    assert not any(isinstance(layer, trunk.FirstTokenLayer)
                   for layer in trunk.tail_view(readers[0].model, 1).base_model.encoder.layer)
    monkeypatch.setenv("ZOO_FIRST_TOKEN", "0")
    assert not any(isinstance(layer, trunk.FirstTokenLayer)
                   for layer in trunk.tail_view(shared[0].model, 1).base_model.encoder.layer)


def test_a_plain_list_of_members_shares_its_trunk_too(shared):
    runs, handles = count_runs(shared)
    try:
        result = explain.explain_ensemble(list(shared), TEXTS[1])
    finally:
        for h in handles:
            h.remove()
    assert runs["embeddings"] == [1, 0, 0]
    assert_same_map(result, explain.explain_ensemble(ensemble(shared, share=False), TEXTS[1]))


def test_qa_members_share_their_trunk_for_spans_and_occlusion(readers):
    assert ensemble(readers).describe() == [([0, 1, 2], 1)]
    assert_same_predictions(ensemble(readers).predict(QA), [p.predict(QA) for p in readers])
    runs, handles = count_runs(readers)
    try:
        together = explain.explain_ensemble(ensemble(readers), QA[0], "occlusion")
    finally:
        for h in handles:
            h.remove()
    assert runs["embeddings"] == [2, 0, 0]  # the members' spans (the answer to explain), then the occluded batch
    apart = explain.explain_ensemble(ensemble(readers, share=False), QA[0], "occlusion")
    assert together["span"] == apart["span"]
    assert_same_map(together, apart)


def test_members_that_share_nothing_fall_back_to_separate_forwards(mixed):
    members = ensemble(mixed)
    assert members.describe() == [([0, 1], 1), ([2], 0), ([3], 0)]  # fully fine-tuned and uploaded: alone
    runs, handles = count_runs(mixed)
    try:
        together = members.predict(TEXTS)
        result = explain.explain_ensemble(members, TEXTS[0], "occlusion")
    finally:
        for h in handles:
            h.remove()
    assert runs["embeddings"] == [2, 0, 2, 2]
    assert_same_predictions(together, [p.predict(TEXTS) for p in mixed])
    assert_same_map(result, explain.explain_ensemble(ensemble(mixed, share=False), TEXTS[0], "occlusion"))
    assert members.subset([3, 1, 0]).describe() == [([0], 0), ([1, 2], 1)]


def test_the_in_process_backend_runs_a_shared_trunk_once(tmp_path):
    paths = member_artifacts(tmp_path, "classification", LABELS)
    refs = [ModelRef(i, f"m{i}", f"t-v{i}", "classification", p) for i, p in enumerate(paths)]
    backend = InProcessBackend()
    predictors = [backend.predictor(r) for r in refs]
    runs, handles = count_runs(predictors)
    try:
        together = backend.predict(refs, TEXTS)
        result = backend.explain_ensemble(refs, TEXTS[0], "occlusion")
    finally:
        for h in handles:
            h.remove()
    assert runs["embeddings"] == [2, 0, 0]
    assert_same_predictions(together, [p.predict(TEXTS) for p in predictors])
    assert_same_map(result, explain.explain_ensemble(ensemble(predictors, share=False), TEXTS[0], "occlusion"))


def test_members_trained_by_the_cached_top_recipe_share_their_frozen_layers(tmp_path):
    rows = [TrainExample({"text": f"{w} film {i}"}, "positive" if i % 2 else "negative")
            for i, w in enumerate(["wonderful", "dreadful", "superb", "awful"] * 4)]
    spec = recipes.RecipeSpec(head="classification", labels=["negative", "positive"], encoder="tiny", max_length=32,
                              min_steps=3, max_steps=3, top_layers=1, batch_size=8)
    recipes.train_ensemble(rows, spec, [tmp_path / "a", tmp_path / "b"], [0, 1])
    members = [Predictor.load(tmp_path / name) for name in ("a", "b")]
    assert ensemble(members).describe() == [([0, 1], 1)]
    assert_same_predictions(ensemble(members).predict(TEXTS), [p.predict(TEXTS) for p in members])


def test_zoo_share_trunk_0_turns_sharing_off(shared, monkeypatch):
    monkeypatch.setenv("ZOO_SHARE_TRUNK", "0")
    assert ensemble(shared).describe() == [([0], 0), ([1], 0), ([2], 0)]


def test_a_tokenizer_that_has_been_used_still_matches_a_fresh_one(tmp_path):
    """A call leaves truncation and padding settings on a fast tokenizer; they are not what it does."""
    paths = member_artifacts(tmp_path, "classification", LABELS, members=2)
    first, second = Predictor.load(paths[0]), Predictor.load(paths[1])
    first.predict(TEXTS)
    assert first.tokenizer is not second.tokenizer
    assert trunk.tokenizer_key(first.tokenizer) == trunk.tokenizer_key(second.tokenizer)
    assert ensemble([first, second]).describe() == [([0, 1], 1)]
