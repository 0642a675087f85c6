import pytest

from modelzoo.testing import tiny_artifact
from zoo.explain import ig_steps, merge_words, normalise
from zoo.runtime import Predictor


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    return Predictor.load(tiny_artifact(tmp_path_factory.mktemp("c") / "m", "classification", ["a", "b", "c"], seed=1))


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    return Predictor.load(tiny_artifact(tmp_path_factory.mktemp("q") / "m", "qa", seed=2))


def test_sub_words_are_merged_back_into_the_words_of_the_text():
    # "unbelievably good" -> un ##bel ##ie ##va ##bly good ; segment ids None for [CLS]/[SEP]
    offsets = [[0, 0], [0, 2], [2, 5], [5, 7], [7, 9], [9, 12], [13, 17], [0, 0]]
    seq = [None, 0, 0, 0, 0, 0, 0, None]
    words = merge_words([9, 1, 1, 1, 1, 1, -2.5, 9], offsets, seq, ("unbelievably good", None))
    assert words == [{"word": "unbelievably", "score": 1.0, "segment": 0},
                     {"word": "good", "score": -0.5, "segment": 0}]


def test_words_of_two_segments_keep_their_segment():
    offsets = [[0, 0], [0, 1], [2, 5], [0, 0], [0, 2], [2, 3], [0, 0]]
    seq = [None, 0, 0, None, 1, 1, None]
    words = merge_words([0, 1, 2, 0, 3, 1, 0], offsets, seq, ("A cat", "No."))
    assert [(w["word"], w["segment"]) for w in words] == [("A", 0), ("cat", 0), ("No.", 1)]
    assert max(abs(w["score"]) for w in words) == 1.0


def test_normalised_scores_are_signed_and_within_minus_one_and_one():
    words = normalise([{"word": "a", "score": -4.0}, {"word": "b", "score": 2.0}, {"word": "c", "score": 0.0}])
    assert [w["score"] for w in words] == [-1.0, 0.5, 0.0]
    assert normalise([{"word": "a", "score": 0.0}])[0]["score"] == 0.0


def test_long_inputs_get_fewer_integrated_gradient_steps():
    assert ig_steps(20) == 32
    assert ig_steps(128) < ig_steps(40) < 32
    assert ig_steps(100_000) >= 8


@pytest.mark.parametrize("method", ["input_x_gradient", "integrated_gradients"])
def test_classification_explanation_has_one_score_per_word_and_records_the_method(classifier, method):
    result = classifier.explain({"text": "The plot's twists aren't earned, sadly."}, method, "b")
    assert result["method"] == method and result["target"] == "b"
    assert [w["word"] for w in result["words"]] == ["The", "plot's", "twists", "aren't", "earned,", "sadly."]
    assert all(-1.0 <= w["score"] <= 1.0 for w in result["words"])
    assert max(abs(w["score"]) for w in result["words"]) == pytest.approx(1.0)
    if method == "integrated_gradients":
        assert result["delta"] is not None and abs(result["delta"]) < 0.1
        assert result["steps"] == 32


def test_pair_explanation_covers_both_texts(classifier):
    result = classifier.explain({"text": "A man plays guitar.", "text_pair": "Nobody plays."}, "input_x_gradient", "a")
    assert [(w["word"], w["segment"]) for w in result["words"]] == [
        ("A", 0), ("man", 0), ("plays", 0), ("guitar.", 0), ("Nobody", 1), ("plays.", 1)]


def test_qa_explanation_has_start_and_end_attributions_over_question_and_passage(reader):
    model_input = {"question": "Who built it?", "context": "Gustave Eiffel's company built the tower."}
    prediction = reader.predict([model_input])[0]
    assert model_input["context"][prediction["start"]:prediction["end"]] == prediction["text"]
    result = reader.explain(model_input, "integrated_gradients")
    assert result["target"] == "start"
    assert [w["word"] for w in result["words"]] == [w["word"] for w in result["end_words"]]
    assert [w["word"] for w in result["words"] if w["segment"] == 1] == model_input["context"].split()
    assert result["delta"] < 0.1


def test_an_unknown_method_is_refused(classifier):
    with pytest.raises(ValueError, match="unknown explanation method"):
        classifier.explain({"text": "hi"}, "shap", "a")
