"""The default explanation tells the truth about a trained model (real encoder, fine-tuned on SST-2 train rows).

Faithfulness is ERASER's comprehensiveness, asked per sentence: deleting the three words the map credits most
for the predicted class lowers that class's probability more than deleting three random words.
"""

from __future__ import annotations

import random

import pytest

from modelzoo.explain import explain_ensemble

pytestmark = pytest.mark.integration

SAMPLE = 40  # held-out SST-2 dev sentences of 8-30 words, the first ones in file order
POSITIVE = "The food was delicious and the staff were wonderful."


def comprehensiveness_wins(predictor, sentences: list[str], seed: int = 0) -> tuple[float, list[dict]]:
    """Share of sentences where deleting the top-3 credited words beats deleting 3 random ones (fixed seed)."""
    rng = random.Random(seed)
    rows = []
    for sentence in sentences:
        words = sentence.split()
        result = explain_ensemble([predictor], {"text": sentence})
        assert [w["word"] for w in result["words"]] == words
        label, base = result["target"], result["probability"]
        top = set(sorted(range(len(words)), key=lambda i: -result["words"][i]["score"])[:3])
        chance = set(rng.sample(range(len(words)), 3))

        def without(dropped: set[int], label: str = label, words: list[str] = words) -> float:
            text = " ".join(w for i, w in enumerate(words) if i not in dropped)
            return predictor.predict([{"text": text}])[0]["probs"][label]

        rows.append({"sentence": sentence, "top": base - without(top), "random": base - without(chance)})
    return sum(r["top"] > r["random"] for r in rows) / len(rows), rows


def test_deleting_the_top_credited_words_lowers_the_prediction_more_than_random_words(trained_sentiment, sst2_dev):
    sentences = [r["sentence"] for r in sst2_dev if 8 <= len(r["sentence"].split()) <= 30][:SAMPLE]
    share, rows = comprehensiveness_wins(trained_sentiment, sentences)
    mean_top = sum(r["top"] for r in rows) / len(rows)
    mean_random = sum(r["random"] for r in rows) / len(rows)
    print(f"\nfaithfulness (ERASER comprehensiveness, top-3 vs 3 random words): {share:.2f} of {len(rows)} sentences; "
          f"mean drop {mean_top:.3f} vs {mean_random:.3f}")
    assert share >= 0.8, [r for r in rows if r["top"] <= r["random"]]
    assert mean_top > mean_random


def test_a_clearly_positive_sentence_credits_its_positive_words(trained_sentiment):
    result = explain_ensemble([trained_sentiment], {"text": POSITIVE})
    assert result["target"] == "positive" and result["probability"] > 0.6
    scores: dict[str, float] = {}
    for w in result["words"]:  # "The" and "the": the higher of the two
        key = w["word"].strip(".").lower()
        scores[key] = max(scores.get(key, -1.0), w["score"])
    ranked = sorted(scores, key=scores.get, reverse=True)
    print(f"\nsign test: {[(w['word'], round(w['score'], 2)) for w in result['words']]}")
    assert set(ranked[:2]) == {"delicious", "wonderful"}, ranked
    assert scores["delicious"] > 0 and scores["wonderful"] > 0
    assert scores["was"] < scores["delicious"] and scores["the"] < scores["delicious"]
    assert "positive" in result["legend"] and "word occlusion over 1 model" in result["legend"]


def test_the_map_is_the_drop_in_probability_when_each_word_is_deleted(trained_sentiment):
    result = explain_ensemble([trained_sentiment], {"text": POSITIVE})
    words = POSITIVE.split()
    for i, w in enumerate(result["words"]):
        text = " ".join(x for j, x in enumerate(words) if j != i)
        drop = result["probability"] - trained_sentiment.predict([{"text": text}])[0]["probs"]["positive"]
        assert w["score"] * result["peak"] == pytest.approx(drop, abs=2e-4), w["word"]
