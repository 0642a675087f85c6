"""Model heads: every task kind's head is registered, and each head's spec is what the zoo relies on."""

import pytest

from modelzoo.models import ModelVersion
from modelzoo.testing import tiny_artifact
from tasks.kinds import KINDS
from zoo import aggregation
from zoo.encoder import load_tokenizer
from zoo.heads import HEADS, get_head
from zoo.runtime import Predictor
from zoo.training import TrainExample

PASSAGE = "The Eiffel Tower was completed in 1889 and it stands in Paris, France."


def test_every_task_kind_names_a_registered_head():
    for kind in KINDS.values():
        if kind.generative:  # language models answer (the chat kind): no encoder head
            assert kind.head == ""
            continue
        assert get_head(kind.head).name == kind.head


def test_every_head_names_a_known_aggregation_and_is_a_model_version_choice():
    stored = {value for value, _ in ModelVersion._meta.get_field("head").choices}
    for name in HEADS:
        aggregation.get_strategy(get_head(name).default_strategy)
        assert name in stored


def test_an_unknown_head_is_refused_by_name():
    with pytest.raises(KeyError, match="unknown model head 'generation'; choose one of: classification, qa"):
        get_head("generation")


def test_a_labelled_head_predicts_its_labels_with_probabilities(tmp_path):
    spec = get_head("classification")
    predictor = Predictor.load(tiny_artifact(tmp_path / "c", "classification", ["pos", "neg", "mixed"]))
    [prediction] = predictor.predict([{"text": "a fine film"}])
    assert spec.labelled and spec.probabilities
    assert set(prediction["probs"]) == {"pos", "neg", "mixed"} and prediction["label"] in prediction["probs"]
    assert spec.target_of(prediction) == prediction["label"]


@pytest.mark.usefixtures("float32_occlusion")
def test_a_span_head_answers_with_a_span_of_the_passage_and_explains_it(tmp_path):
    spec = get_head("qa")
    predictor = Predictor.load(tiny_artifact(tmp_path / "q", "qa"))
    model_input = {"question": "When was it completed?", "context": PASSAGE}
    [prediction] = predictor.predict([model_input])
    assert PASSAGE[prediction["start"]:prediction["end"]] == prediction["text"]
    explanation = predictor.explain(model_input, target=spec.target_of(prediction))  # occlusion: the span's probability
    assert explanation["target"] == "answer" and explanation["words"]
    assert explanation["probability"] == pytest.approx(prediction["score"], rel=1e-4)
    gradient = predictor.explain(model_input, "input_x_gradient", target=spec.target_of(prediction))
    assert gradient["target"] == "start" and gradient["words"] and gradient["end_words"]


def test_a_span_answer_cut_off_by_the_max_length_trains_towards_the_cls_token():
    late = PASSAGE + " " + "filler words " * 40 + "The answer is here."
    row = TrainExample({"question": "Where?", "context": late}, {"text": "here", "start": late.rindex("here")})
    [feature] = get_head("qa").features(load_tokenizer(), [row], [], max_length=32)
    assert (feature["start_positions"], feature["end_positions"]) == (0, 0)
    assert len(feature["input_ids"]) == 32
