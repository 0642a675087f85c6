"""Word occlusion over an ensemble, with tiny random models: shape, batching, the ensemble's answer, QA spans."""

from __future__ import annotations

import contextlib

import pytest
import torch

from modelzoo.testing import tiny_artifact
from zoo import explain, precision
from zoo.heads import get_head
from zoo.heads.qa import best_spans
from zoo.runtime import Predictor
from zoo.serving.base import Backend, ModelRef
from zoo.serving.inprocess import InProcessBackend

LABELS = ["negative", "neutral", "positive"]
TEXT = "The plot's twists aren't earned, sadly."
QA_INPUT = {"question": "When was it completed?", "context": "The Eiffel Tower was completed in 1889 and is in Paris."}


def sensitive_tiny(path, seed: int):
    """A tiny classifier whose weights are shaken (std 0.2) so that deleting a word moves its probabilities by
    ~1e-2 (freshly initialised ones move by ~1e-6, below float32 noise once normalised)."""
    path = tiny_artifact(path, "classification", LABELS, seed=seed)
    model = get_head("classification").auto_model.from_pretrained(str(path))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "LayerNorm" not in name:
                parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.2)
    model.save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def member_paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("members")
    return [sensitive_tiny(root / f"m{seed}", seed) for seed in range(3)]


@pytest.fixture(scope="module")
def members(member_paths):
    return [Predictor.load(path) for path in member_paths]


@pytest.fixture(scope="module")
def readers(tmp_path_factory):
    root = tmp_path_factory.mktemp("readers")
    return [Predictor.load(tiny_artifact(root / f"q{seed}", "qa", seed=seed)) for seed in range(2)]


@contextlib.contextmanager
def forward_batches(predictors):
    """Record the batch shape of every forward call of each predictor's model while the block runs."""
    calls: list[list[tuple[int, ...]]] = [[] for _ in predictors]
    handles = [p.model.register_forward_hook(lambda m, a, kw, out, i=i: calls[i].append(tuple(kw["input_ids"].shape)),
                                             with_kwargs=True) for i, p in enumerate(predictors)]
    try:
        yield calls
    finally:
        for h in handles:
            h.remove()


@pytest.mark.usefixtures("float32_occlusion")
def test_occlusion_runs_one_forward_batch_per_member_with_one_row_per_word(members):
    with forward_batches(members) as calls:
        result = explain.explain_ensemble(members, {"text": TEXT})
    n_words = len(TEXT.split())
    assert [len(c) for c in calls] == [1, 1, 1]  # verdict and map from the same batch: no other forward pass
    assert all(c[0][0] == n_words + 1 for c in calls)
    assert [w["word"] for w in result["words"]] == TEXT.split()
    assert result["members"] == 3 and result["method"] == "occlusion" and result["steps"] == 1
    assert max(abs(w["score"]) for w in result["words"]) == pytest.approx(1.0)


def test_the_ensemble_answer_and_its_probability_are_the_mean_over_all_members(members):
    result = explain.explain_ensemble(members, {"text": TEXT})
    predictions = [p.predict([{"text": TEXT}])[0] for p in members]
    mean = {label: sum(p["probs"][label] for p in predictions) / 3 for label in LABELS}
    assert result["target"] == max(mean, key=mean.get)
    assert result["probability"] == pytest.approx(mean[result["target"]], abs=1e-5)
    assert [p["label"] for p in result["predictions"]] == [p["label"] for p in predictions]
    assert "word occlusion over 3 models" in result["legend"] and result["target"] in result["legend"]


@pytest.mark.usefixtures("float32_occlusion")
def test_each_word_score_is_the_drop_in_the_mean_probability_when_that_word_is_deleted(members):
    result = explain.explain_ensemble(members, {"text": TEXT}, target="neutral")
    words = TEXT.split()

    def mean_prob(text: str) -> float:
        return sum(p.predict([{"text": text}])[0]["probs"]["neutral"] for p in members) / len(members)

    assert result["peak"] > 1e-3  # these models react to words: the check below is not lost in float noise
    for i, w in enumerate(result["words"]):
        dropped = " ".join(x for j, x in enumerate(words) if j != i)
        assert w["score"] * result["peak"] == pytest.approx(result["probability"] - mean_prob(dropped), abs=1e-6)


def test_an_ensemble_map_differs_from_one_members_map_when_members_disagree(members):
    first_label = members[0].predict([{"text": TEXT}])[0]["label"]
    assert any(p.predict([{"text": TEXT}])[0]["label"] != first_label for p in members[1:])  # they disagree
    whole = explain.explain_ensemble(members, {"text": TEXT}, target="positive")
    first = explain.explain_ensemble(members[:1], {"text": TEXT}, target="positive")
    assert whole["members"] == 3 and first["members"] == 1
    assert [w["score"] for w in whole["words"]] != pytest.approx([w["score"] for w in first["words"]], abs=1e-3)


def test_pairs_keep_their_segments(members):
    result = explain.explain_ensemble(members, {"text": "A man plays guitar.", "text_pair": "Nobody plays."})
    assert [(w["word"], w["segment"]) for w in result["words"]] == [
        ("A", 0), ("man", 0), ("plays", 0), ("guitar.", 0), ("Nobody", 1), ("plays.", 1)]


@pytest.mark.parametrize("method", ["input_x_gradient", "integrated_gradients"])
def test_gradient_methods_stay_selectable_and_cover_every_member(members, method):
    result = explain.explain_ensemble(members, {"text": TEXT}, method, target="positive")
    assert result["method"] == method and result["members"] == 3 and result["target"] == "positive"
    assert [w["word"] for w in result["words"]] == TEXT.split()
    assert method.split("_")[0] in result["legend"] or "gradient" in result["legend"]


def test_qa_span_confidence_is_a_probability_over_the_valid_spans(readers):
    reader = readers[0]
    encoding = reader.encode([QA_INPUT], offsets=True)
    with torch.inference_mode():
        output = reader.model(**reader.model_args(encoding))
    spans = best_spans(output.start_logits[0], output.end_logits[0], encoding.sequence_ids(0),
                       encoding["offset_mapping"][0].tolist(), QA_INPUT["context"], n_best=10_000)
    assert sum(s["score"] for s in spans) == pytest.approx(1.0, abs=1e-4)  # every valid span, probabilities
    assert spans == sorted(spans, key=lambda s: -s["score"])


def test_qa_occlusion_explains_the_ensemble_answer_span_over_both_members(readers):
    with forward_batches(readers) as calls:
        result = explain.explain_ensemble(readers, QA_INPUT)
    predictions = [r.predict([QA_INPUT])[0] for r in readers]
    target = readers[0].spec.ensemble_target(predictions)
    assert result["span"] == [target["start"], target["end"]] and result["target"] == "answer"
    assert result["members"] == 2
    n_words = len(QA_INPUT["question"].split()) + len(QA_INPUT["context"].split())
    assert [c[-1][0] for c in calls] == [n_words + 1, n_words + 1]  # one occlusion batch per member
    assert [w["word"] for w in result["words"] if w["segment"] == 1] == QA_INPUT["context"].split()
    assert 0 < result["probability"] <= 1 and "its answer" in result["legend"]


@pytest.mark.usefixtures("float32_occlusion")
def test_the_generic_backend_default_explains_every_member_and_averages(member_paths):
    class Generic(InProcessBackend):  # the in-process backend without its own explain_ensemble
        explain_ensemble = Backend.explain_ensemble

    refs = [ModelRef(i + 1, f"g{i}", f"g{i}", "classification", path) for i, path in enumerate(member_paths)]
    generic = Generic().explain_ensemble(refs, {"text": TEXT}, "occlusion")
    batched = InProcessBackend().explain_ensemble(refs, {"text": TEXT}, "occlusion")
    assert generic["members"] == batched["members"] == 3
    assert generic["target"] == batched["target"]
    assert [w["word"] for w in generic["words"]] == [w["word"] for w in batched["words"]]
    # member by member (one request each) gives exactly the batched map: the mean drop of the mean probability
    assert [w["score"] for w in generic["words"]] == pytest.approx([w["score"] for w in batched["words"]], abs=1e-4)
    assert generic["probability"] == pytest.approx(batched["probability"], abs=1e-6)
    assert generic["legend"] == batched["legend"]
    assert len(generic["predictions"]) == 3


def test_an_unknown_method_is_refused(members):
    with pytest.raises(ValueError, match="unknown explanation method"):
        explain.explain_ensemble(members, {"text": "hi"}, "shap")


def test_a_long_passage_is_occluded_in_groups_within_the_row_budget(readers):
    filler = " ".join(f"Sentence {i} says nothing about towers at all." for i in range(12))
    context = f"{filler} The Eiffel Tower was completed in 1889 and is in Paris. {filler}"
    model_input = {"question": "When was the Eiffel Tower completed?", "context": context}
    answer = {"start": context.index("1889"), "end": context.index("1889") + 4}
    with forward_batches(readers[:1]) as calls:
        result = explain.explain_ensemble(readers[:1], model_input, target=answer)
    budget = readers[0].spec.occlusion_max_features(len(readers[0].encode([model_input])["input_ids"][0]))
    [[(rows, _)]] = calls
    assert rows <= budget + 3  # the unchanged input, at most `budget` features, and a break at the answer
    passage = [w for w in result["words"] if w["segment"] == 1]
    assert len(passage) > 2 * budget  # every word is on the map, though most share a group's row
    question = [w["word"] for w in result["words"] if w["segment"] == 0]
    assert question == model_input["question"].split()  # the question's words are each deleted alone
    assert result["group"] > 1 and "groups of up to" in result["legend"]
    short = explain.explain_ensemble(readers[:1], QA_INPUT)  # a short passage fits the budget word by word
    assert short["group"] == 1 and "groups" not in short["legend"]


def test_features_never_join_the_answer_with_other_words():
    words = [{"segment": 0, "tokens": [1]}, {"segment": 0, "tokens": [2]}] + \
        [{"segment": 1, "tokens": [t]} for t in range(4, 24)]
    features = explain.plan_features(words, protected={10, 11}, budget=8)
    assert [0] in features and [1] in features  # the question's words stay single
    assert [8, 9] in features  # the answer's two words (tokens 10 and 11) form one feature of their own
    assert sorted(i for f in features for i in f) == list(range(len(words)))
    assert len(features) <= 8 + 2
    assert explain.plan_features(words[:5], protected=set(), budget=8) == [[0], [1], [2], [3], [4]]


@pytest.mark.usefixtures("float32_occlusion")
def test_a_long_nli_premise_is_grouped_and_the_writers_hypothesis_goes_word_by_word(members, monkeypatch):
    # The real budget: a 120-token ANLI-sized pair gets 34 rows, a 20-token sentence one row per word.
    assert get_head("classification").occlusion_max_features(120) == 34
    assert get_head("classification").occlusion_max_features(20) >= 20
    # The tiny models read 64 tokens, less than a pair needs to exceed that budget: a budget of 16 rows here,
    # and a pair that fits untruncated.
    monkeypatch.setattr(type(members[0].spec), "occlusion_max_features", lambda self, n_tokens: 16)
    premise = " ".join(f"Clause {i} describes the harbour, the boats and the weather." for i in range(3))
    model_input = {"text": premise, "text_pair": "Nobody in the report mentions any boats at all."}
    with forward_batches(members[:1]) as calls:
        result = explain.explain_ensemble(members[:1], model_input)
    n_tokens = len(members[0].encode([model_input])["input_ids"][0])
    assert n_tokens < members[0].max_length
    budget = members[0].spec.occlusion_max_features(n_tokens)
    [[(rows, _)]] = calls
    assert rows <= budget + 1  # the unchanged input and at most `budget` deletions: the cost stays bounded
    # The writer's words are each deleted alone: a word's score is the drop when that word alone is deleted.
    hypothesis = [w for w in result["words"] if w["segment"] == 1]
    words = model_input["text_pair"].split()
    assert [w["word"] for w in hypothesis] == words
    label, full = result["target"], result["probability"]
    assert result["peak"] > 1e-3
    for i, w in enumerate(hypothesis):
        dropped = {**model_input, "text_pair": " ".join(x for j, x in enumerate(words) if j != i)}
        assert w["score"] * result["peak"] == pytest.approx(
            full - members[0].predict([dropped])[0]["probs"][label], abs=1e-6)
    # The given premise: every word on the map, in groups that share one colour, within the budget.
    premise_words = [w for w in result["words"] if w["segment"] == 0]
    assert [w["word"] for w in premise_words] == premise.split()
    assert result["group"] > 1 and len({w["score"] for w in premise_words}) <= budget
    assert "the given text's words in groups of up to" in result["legend"]
    short = explain.explain_ensemble(members[:1], {"text": "A man plays.", "text_pair": "Nobody plays."})
    assert short["group"] == 1 and "groups" not in short["legend"]  # a short pair goes word by word


# -- precision of the occlusion batch ----------------------------------------------------------------


def test_auto_precision_is_bfloat16_only_for_batches_of_several_rows_on_a_cpu_that_multiplies_it(monkeypatch):
    monkeypatch.delenv("ZOO_OCCLUSION_PRECISION", raising=False)
    monkeypatch.setattr(precision, "native_bf16", lambda: True)
    assert explain.occlusion_dtype(20) is torch.bfloat16
    assert explain.occlusion_dtype(explain.BF16_MIN_ROWS - 1) is None  # one short row is cheaper in float32
    monkeypatch.setattr(precision, "native_bf16", lambda: False)  # emulated bfloat16 would be slower
    assert explain.occlusion_dtype(20) is None
    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", "bf16")
    assert explain.occlusion_dtype(20) is torch.bfloat16
    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", "fp32")
    monkeypatch.setattr(precision, "native_bf16", lambda: True)
    assert explain.occlusion_dtype(20) is None


def test_a_bfloat16_batch_keeps_the_float32_map_and_the_verdict_comes_from_a_float32_pass(members, monkeypatch):
    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", "fp32")
    exact = explain.explain_ensemble(members, {"text": TEXT})
    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", "bf16")
    with forward_batches(members) as calls:
        fast = explain.explain_ensemble(members, {"text": TEXT})
    n_words = len(TEXT.split())
    assert calls == [[(n_words + 1, calls[0][0][1]), (1, calls[0][1][1])]] * 3  # the batch, then row 0 in float32
    # the answer, its confidence and each member's prediction are the float32 ones, exactly
    assert fast["target"] == exact["target"]
    assert fast["probability"] == pytest.approx(exact["probability"], abs=1e-6)
    for a, b in zip(fast["predictions"], exact["predictions"], strict=True):
        assert a["label"] == b["label"] and a["probs"] == pytest.approx(b["probs"], abs=1e-6)
    # the map itself: every word within a few hundredths of its float32 score, the strongest word the same one
    assert [w["word"] for w in fast["words"]] == [w["word"] for w in exact["words"]]
    assert [w["score"] for w in fast["words"]] == pytest.approx([w["score"] for w in exact["words"]], abs=0.06)
    assert fast["peak"] == pytest.approx(exact["peak"], rel=0.1)
    strongest = max(range(n_words), key=lambda i: abs(exact["words"][i]["score"]))
    assert max(range(n_words), key=lambda i: abs(fast["words"][i]["score"])) == strongest


def test_a_bfloat16_map_of_a_given_answer_needs_no_extra_pass(members, monkeypatch):
    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", "bf16")
    with forward_batches(members) as calls:
        explain.explain_ensemble(members, {"text": TEXT}, target="neutral")  # the map job: the verdict is known
    assert [len(c) for c in calls] == [1, 1, 1]
