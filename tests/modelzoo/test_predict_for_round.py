import pytest

from modelzoo import services
from modelzoo.testing import deploy_tiny_ensemble
from zoo.types import BackendError


def test_round_without_ensemble_raises_a_retryable_error(open_round):
    with pytest.raises(BackendError) as err:
        services.predict_for_round(open_round, [{"text": "hello"}])
    assert err.value.retryable
    assert "no deployed model ensemble" in str(err.value)


def test_classification_verdict_keeps_every_member_prediction_and_explains(open_round):
    ensemble = deploy_tiny_ensemble(open_round, members=2)
    [verdict] = services.predict_for_round(open_round, [{"text": "What a lovely, bright day"}])
    labels = open_round.task.typed_config.labels
    assert verdict["ensemble"]["label"] in labels
    assert set(verdict["ensemble"]["probs"]) == set(labels)
    assert sum(verdict["ensemble"]["probs"].values()) == pytest.approx(1.0, abs=1e-5)
    assert [m["model_version"] for m in verdict["models"]] == [v.pk for v in ensemble.ordered_members()]
    assert verdict["model_versions"] == [v.pk for v in ensemble.ordered_members()]
    explanation = verdict["explanation"]
    assert explanation["method"] == "occlusion"  # the default: word occlusion over the whole ensemble
    assert explanation["members"] == 2 and explanation["model_versions"] == verdict["model_versions"]
    assert explanation["target"] == verdict["ensemble"]["label"]
    assert explanation["probability"] == pytest.approx(verdict["ensemble"]["probs"][verdict["ensemble"]["label"]], abs=1e-5)
    assert "word occlusion over 2 models" in explanation["legend"]
    assert "predictions" not in explanation  # the members' predictions are the verdict's, not stored twice
    assert [w["word"] for w in explanation["words"]] == ["What", "a", "lovely,", "bright", "day"]


@pytest.mark.parametrize("method", ["input_x_gradient", "integrated_gradients"])
def test_a_task_can_choose_a_gradient_method_for_its_explanations(open_round, method):
    task = open_round.task
    task.config = {**task.config, "explanation_method": method}
    task.save()
    deploy_tiny_ensemble(open_round, members=2)
    [verdict] = services.predict_for_round(open_round, [{"text": "What a lovely, bright day"}])
    explanation = verdict["explanation"]
    assert explanation["method"] == method and explanation["members"] == 2
    assert explanation["target"] == verdict["ensemble"]["label"]
    assert [w["word"] for w in explanation["words"]] == ["What", "a", "lovely,", "bright", "day"]


def test_verdicts_come_in_input_order_without_explanations_when_not_asked(open_round):
    deploy_tiny_ensemble(open_round, members=1)
    verdicts = services.predict_for_round(open_round, [{"text": "one"}, {"text": "two words"}], explain=False)
    assert len(verdicts) == 2
    assert all(v["explanation"] is None for v in verdicts)


def test_qa_verdict_is_a_span_of_the_passage_with_start_and_end_attributions(qa_round):
    deploy_tiny_ensemble(qa_round, members=2)
    passage = "The Eiffel Tower was completed in 1889 and is in Paris."
    [verdict] = services.predict_for_round(qa_round, [{"question": "When was it completed?", "context": passage}])
    span = verdict["ensemble"]
    assert passage[span["start"]:span["end"]] == span["text"]
    assert all("candidates" not in m["prediction"] for m in verdict["models"])
    assert 0.0 < span["score"] <= 1.0  # the mean over members of the span's probability among valid spans
    explanation = verdict["explanation"]
    assert explanation["target"] == "answer" and explanation["span"] == [span["start"], span["end"]]
    assert explanation["members"] == 2
    assert {w["segment"] for w in explanation["words"]} == {0, 1}
    question_words = [w["word"] for w in explanation["words"] if w["segment"] == 0]
    assert question_words == ["When", "was", "it", "completed?"]


@pytest.mark.parametrize("precision, passes", [
    ("fp32", [6]),  # per member one batch: the sentence and the sentence without each of its 5 words
    ("bf16", [6, 1]),  # the same batch in bfloat16, then the sentence alone in float32 for the verdict itself
])
def test_a_classification_verdict_and_its_map_take_one_forward_batch_per_member(open_round, monkeypatch, precision,
                                                                                passes):
    from modelzoo.serving import ModelRef, get_backend

    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", precision)
    ensemble = deploy_tiny_ensemble(open_round, members=3)
    predictors = [get_backend().predictor(ModelRef.of(v)) for v in ensemble.ordered_members()]
    rows: list[list[int]] = [[] for _ in predictors]
    hooks = [p.model.register_forward_hook(lambda m, a, kw, out, i=i: rows[i].append(kw["input_ids"].shape[0]),
                                           with_kwargs=True) for i, p in enumerate(predictors)]
    try:
        [verdict] = services.predict_for_round(open_round, [{"text": "What a lovely, bright day"}])
    finally:
        for hook in hooks:
            hook.remove()
    assert rows == [passes] * 3
    assert verdict["explanation"]["members"] == 3 and len(verdict["models"]) == 3
