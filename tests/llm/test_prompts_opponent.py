"""What is sent to a language model and what is kept of its answers (pure text), and how a language model becomes a
classifier: first-token scoring, offsets fitted on dev rows, probabilities in the encoders' format."""

from __future__ import annotations

import math
import random

import pytest

from zoo.llm.base import Generation, Provider, Scores, Usage
from zoo.llm.chat import first_token_scores
from zoo.llm.opponent import LLMClassifier, accuracy, fit_offsets
from zoo.llm.prompts import clean_candidates, label_word, opponent_prompt, suggestion_prompt

# --- prompts ----------------------------------------------------------------------------------------------


def test_the_opponent_prompt_names_every_label_word_and_asks_right_after_a_colon():
    system, user = opponent_prompt("## Rate the **review**: is it positive or negative?",
                                   ["positive", "negative"], {"text": 'She said "fine" and left.'})
    assert "Rate the review" in system and "#" not in system and "*" not in system
    assert user.endswith("Label (positive or negative):")
    assert "Text: \"She said 'fine' and left.\"" in user


def test_the_opponent_prompt_shows_both_fields_of_a_pair_under_the_task_s_names():
    _, user = opponent_prompt("", ["entailment", "neutral", "contradiction"],
                              {"text": "A man plays a guitar.", "text_pair": "Someone makes music."},
                              field_names=("Premise", "Hypothesis"))
    assert user.splitlines() == ['Premise: "A man plays a guitar."', 'Hypothesis: "Someone makes music."',
                                 "Label (entailment, neutral or contradiction):"]


def test_extractive_qa_has_no_opponent():
    with pytest.raises(ValueError, match="extractive QA has no opponent"):
        opponent_prompt("", ["answer"], {"question": "Who?", "context": "Ada did."})


def test_label_words_come_from_the_labels_or_the_task_s_overrides():
    assert label_word("not_hate-speech") == "not hate speech"
    assert label_word("OFF", {"OFF": "offensive"}) == "offensive"


def test_the_suggestion_prompt_pairs_each_example_with_its_context_and_opens_one_for_the_shown_context():
    shots = [{"text": "Oh great, another delay.", "label": "negative", "context": {"prompt": "a train station"}},
             {"text": "Not bad at all, honestly.", "label": "positive"},
             {"text": "x " * 1000, "label": "positive"}]
    prompt = suggestion_prompt("Write reviews.", {"prompt": "a seaside hotel"}, "positive", None, shots)
    assert "given prompt" in prompt.user and "seaside" not in prompt.user
    blocks = prompt.prefix.split("\n\n")
    assert blocks[0] == 'Prompt: "a train station"\nNegative text: "Oh great, another delay."'
    assert blocks[1] == 'Positive text: "Not bad at all, honestly."'  # no context: the text alone
    assert len(blocks[2]) < 340  # a long example is cut
    assert blocks[-1] == 'Prompt: "a seaside hotel"\nPositive text: "'
    assert '"' in prompt.stop


def test_candidates_are_tidied_and_descriptions_copies_and_duplicates_dropped():
    raw = ['Review: "The soup was cold, but the smile was warm." (label: positive)',
           "This review is about a hotel and it is positive.",
           "the soup was cold, but the smile was warm!",
           "A seaside hotel",  # the context itself
           "Not bad at all, honestly.",  # a few-shot example
           "ok",
           "The view made up for the tiny room, and then some. And the breakfast was",
           "Sure! Here is one: The staff never stopped smiling.\nAnd another line"]
    kept = clean_candidates(raw, context={"prompt": "A seaside hotel"}, examples=["Not bad at all, honestly."])
    assert kept == ["The soup was cold, but the smile was warm.",
                    "The view made up for the tiny room, and then some.",
                    "The staff never stopped smiling."]


# --- first-token scoring ---------------------------------------------------------------------------------


def test_a_label_collects_the_mass_of_the_tokens_that_begin_it_and_no_other_label():
    top = [(" positive", math.log(0.5)), ("Positive", math.log(0.2)), ("ne", math.log(0.2)),
           ("neg", math.log(0.05)), ("The", math.log(0.05))]
    positive, negative, neutral = first_token_scores(top, ["positive", "negative", "neutral"])
    assert positive == pytest.approx(math.log(0.7))
    assert negative == pytest.approx(math.log(0.05))  # "ne" begins two labels: it counts for neither
    assert neutral == pytest.approx(math.log(0.05) - math.log(2))  # absent: below everything seen, finite


# --- the classifier --------------------------------------------------------------------------------------


class Biased(Provider):
    """A provider whose label scores are given per text: a fixture for the classifier's arithmetic (the real
    model's verdicts are tested in tests/annotation/test_llm_opponent.py and tests/llm/test_providers.py)."""

    name = "biased"

    def __init__(self, table: dict[str, list[float]]):
        self.table = table
        self.prompts: list[str] = []

    @property
    def model(self) -> str:
        return "biased-1"

    def generate(self, user, *, system="", n=1, max_tokens=48, temperature=0.8, seed=None, prefix="", stop=None):
        return Generation(texts=[""] * n, model=self.model)

    def score(self, user, continuations, *, system=""):
        self.prompts.append(user)
        text = user.split('"')[1]
        return Scores(logprobs=list(self.table[text]), model=self.model, usage=Usage(prompt_tokens=10))

    def health(self, timeout_s=2.0):
        return {"status": "ok", "model": self.model, "detail": ""}


def _biased_rows(n: int = 200, seed: int = 0):
    """A model that says "positive" far too often: raw log-probs carry the truth plus a constant bias."""
    rng = random.Random(seed)
    table, gold = {}, []
    for i in range(n):
        label = "positive" if i % 2 else "negative"
        signal = 1.0 if label == "positive" else -1.0
        pos = math.log(0.5) + 1.5 + 0.8 * signal + rng.gauss(0, 0.6)
        table[f"text {i}"] = [math.log(0.5), pos]  # [negative, positive]
        gold.append(label)
    return table, gold


def test_offsets_fitted_on_dev_rows_undo_a_label_bias():
    table, gold = _biased_rows()
    classifier = LLMClassifier(Biased(table), ["negative", "positive"], "Rate it.")
    raw = classifier.raw_scores([{"text": t} for t in table])
    before = accuracy(raw, gold, labels=classifier.labels)
    offsets = fit_offsets(raw, gold, classifier.labels)
    after = accuracy(raw, gold, offsets, classifier.labels)
    assert before < 0.62  # nearly always "positive"
    assert after > 0.85
    assert offsets["negative"] == 0.0 and offsets["positive"] < -1.0


def test_the_classifier_predicts_in_the_encoders_format_with_its_offsets():
    table = {"good": [math.log(0.2), math.log(0.8)], "meh": [math.log(0.45), math.log(0.55)]}
    classifier = LLMClassifier(Biased(table), ["negative", "positive"], offsets={"positive": -0.5})
    good, meh = classifier.predict([{"text": "good"}, {"text": "meh"}])
    assert good["label"] == "positive" and meh["label"] == "negative"  # the offset tips the close call
    assert sum(good["probs"].values()) == pytest.approx(1.0)
    assert classifier.describe() == {"provider": "biased", "model": "biased-1", "labels": ["negative", "positive"],
                                     "label_words": {"negative": "negative", "positive": "positive"},
                                     "offsets": {"negative": 0.0, "positive": -0.5}}


def test_offsets_on_no_rows_are_zero_and_a_label_missing_from_dev_does_not_run_off():
    assert fit_offsets([], [], ["a", "b"]) == {"a": 0.0, "b": 0.0}
    raw = [{"a": -0.1, "b": -2.0, "c": -3.0}] * 20
    offsets = fit_offsets(raw, ["b"] * 20, ["a", "b", "c"])
    assert abs(offsets["c"]) < 50 and offsets["b"] > 1.9
