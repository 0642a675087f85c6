import pytest
from pydantic import ValidationError

from tasks.kinds import InputError, get_kind
from tasks.kinds.qa import f1_score


def cfg(kind: str, **overrides):
    return get_kind(kind).parse_config(overrides)


@pytest.mark.parametrize(
    ("raw", "field", "message"),
    [
        ({"text": ""}, "input.text", "must not be empty"),
        ({"text": "   "}, "input.text", "must not be empty"),
        ({"text": "x" * 501}, "input.text", "the limit is 500"),
        ({"text": "bad\x00byte"}, "input.text", "control character U+0000"),
        ({"text": "bell\x07"}, "input.text", "control character U+0007"),
        ({"text": 42}, "input.text", "must be a string"),
        ({}, "input.text", "is required"),
        ({"text": "ok", "fooled": True}, "input", "unknown field(s) fooled"),
        ("just a string", "input", "must be an object"),
    ],
)
def test_sentiment_input_errors_name_the_field(raw, field, message):
    kind = get_kind("sentiment")
    with pytest.raises(InputError) as err:
        kind.clean_input(cfg("sentiment"), {}, raw)
    assert err.value.field == field
    assert message in err.value.message


def test_sentiment_input_is_stripped_and_newlines_kept():
    kind = get_kind("sentiment")
    assert kind.clean_input(cfg("sentiment"), {}, {"text": "  line one\nline two "}) == {"text": "line one\nline two"}


def test_unknown_label_is_refused_with_the_allowed_labels():
    with pytest.raises(InputError) as err:
        get_kind("sentiment").clean_target(cfg("sentiment"), {}, "angry")
    assert err.value.field == "target"
    assert "positive, negative, neutral" in err.value.message


@pytest.mark.parametrize(
    ("kind", "target", "predicted", "fooled"),
    [
        ("sentiment", "positive", "negative", True),
        ("sentiment", "positive", "positive", False),
        ("nli", "entailment", "contradiction", True),
        ("hate_speech", "hateful", "hateful", False),
    ],
)
def test_classification_fooled_when_the_ensemble_label_differs(kind, target, predicted, fooled):
    impl = get_kind(kind)
    assert impl.is_fooled(cfg(kind), target, {"label": predicted, "probs": {}}) is fooled


def test_nli_model_input_pairs_premise_and_hypothesis():
    impl = get_kind("nli")
    assert impl.model_input(cfg("nli"), {"premise": "A dog runs."}, {"hypothesis": "An animal moves."}) == {
        "text": "A dog runs.",
        "text_pair": "An animal moves.",
    }


def test_sentiment_prompt_is_shown_but_not_fed_to_the_model():
    impl = get_kind("sentiment")
    assert impl.model_input(cfg("sentiment"), {"prompt": "inspiration"}, {"text": "great"}) == {"text": "great"}


def test_hate_speech_default_labels():
    assert cfg("hate_speech").labels == ["hateful", "not hateful"]


def test_a_new_classification_task_is_defined_by_configuration_alone():
    impl = get_kind("classification")
    config = impl.parse_config(
        {"labels": ["sarcastic", "sincere"], "context_fields": ["tweet"], "input_fields": ["reply"]}
    )
    assert impl.clean_target(config, {"tweet": "t"}, "sarcastic") == "sarcastic"
    assert impl.model_input(config, {"tweet": "Nice weather."}, {"reply": "Sure is."}) == {
        "text": "Nice weather.",
        "text_pair": "Sure is.",
    }
    with pytest.raises(InputError):
        impl.clean_target(config, {}, "positive")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"labels": ["only"]}, "at least 2"),
        ({"labels": ["a", "a"]}, "labels must be unique"),
        ({"input_fields": ["Bad Name"]}, "lower-case"),
        ({"submission_rate": "lots"}, "submission_rate"),
        ({"splits": {"train": 0.5, "dev": 0.1, "test": 0.1}}, "add up to 1"),
        ({"surprise": 1}, "Extra inputs are not permitted"),
        ({"context_fields": ["a"], "model_context_fields": ["b"]}, "not in context_fields"),
    ],
)
def test_bad_configs_are_refused(config, message):
    with pytest.raises(ValidationError) as err:
        get_kind("classification").parse_config(config)
    assert message in str(err.value)


PASSAGE = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris."


def test_qa_answer_must_match_the_passage_at_start():
    impl = get_kind("qa")
    config = cfg("qa")
    start = PASSAGE.index("1889")
    assert impl.clean_target(config, {"passage": PASSAGE}, {"text": "1889", "start": start}) == {"text": "1889", "start": start}
    with pytest.raises(InputError) as err:
        impl.clean_target(config, {"passage": PASSAGE}, {"text": "1889", "start": start + 1})
    assert err.value.field == "target.text"
    assert f"does not match the passage at character {start + 1}" in err.value.message


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"text": "1889"}, "target.start"),
        ({"text": "1889", "start": -1}, "target.start"),
        ({"text": "1889", "start": "12"}, "target.start"),
        ({"text": "", "start": 0}, "target.text"),
        ("1889", "target"),
        ({"text": "1889", "start": 0, "fooled": False}, "target"),
    ],
)
def test_qa_bad_targets(target, field):
    with pytest.raises(InputError) as err:
        get_kind("qa").clean_target(cfg("qa"), {"passage": PASSAGE}, target)
    assert err.value.field == field


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("1889", "1889", 1.0),
        ("in 1889", "1889", 1.0),  # "in" kept: 1 common of 2 predicted -> P=.5 R=1 -> .667? no: see below
        ("The Eiffel Tower", "eiffel tower", 1.0),  # articles, case
        ("Paris!", "paris", 1.0),  # punctuation
        ("", "", 1.0),
        ("", "1889", 0.0),
        ("1889", "", 0.0),
        ("completely different", "1889", 0.0),
        ("the world's fair in paris", "world's fair", 2 * (2 / 4) * 1 / (2 / 4 + 1)),
    ],
)
def test_qa_f1_edge_cases(prediction, gold, expected):
    if prediction == "in 1889":
        expected = 2 * 0.5 * 1.0 / 1.5
    assert f1_score(prediction, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("predicted", "fooled"),
    [
        ("1889", False),  # exact
        ("completed in 1889 for the World's Fair", True),  # 1 of 6 tokens -> F1 0.286 < 0.4
        ("in 1889 for", False),  # 1 of 3 -> F1 0.5 >= 0.4
        ("Paris", True),
    ],
)
def test_qa_fooled_below_the_f1_threshold(predicted, fooled):
    impl = get_kind("qa")
    assert impl.is_fooled(cfg("qa"), {"text": "1889", "start": 34}, {"text": predicted}) is fooled


def test_qa_threshold_is_a_task_setting():
    impl = get_kind("qa")
    strict = cfg("qa", f1_threshold=0.9)
    assert impl.is_fooled(strict, {"text": "1889", "start": 34}, {"text": "in 1889 for"}) is True


def test_metrics_per_kind():
    sentiment = get_kind("sentiment")
    scores = sentiment.evaluate(cfg("sentiment"), ["positive", "negative", "positive", "neutral"],
                                [{"label": "positive"}, {"label": "positive"}, {"label": "positive"}, {"label": "neutral"}])
    assert scores["accuracy"] == pytest.approx(0.75)
    # positive: tp2 fp1 fn0 -> .8; negative: tp0 -> 0; neutral: tp1 -> 1
    assert scores["macro_f1"] == pytest.approx((0.8 + 0 + 1) / 3)
    qa = get_kind("qa").evaluate(cfg("qa"), [{"text": "1889", "start": 0, "alternatives": ["in 1889"]}], [{"text": "in 1889"}])
    assert qa == {"exact_match": 1.0, "f1": 1.0}
