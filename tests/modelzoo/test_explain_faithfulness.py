"""The default explanation tells the truth about a trained model (real encoder, fine-tuned on SST-2 train rows).

Faithfulness is ERASER's comprehensiveness, asked per sentence: deleting the three words the map credits most
for the predicted class lowers that class's probability more than deleting three random words.
"""

from __future__ import annotations

import pytest

from zoo.explain import explain_ensemble
from zoo.faithfulness import comprehensiveness, held_out_sentences

pytestmark = pytest.mark.integration

SAMPLE = 40  # held-out SST-2 dev sentences of 8-30 words, the first ones in file order
POSITIVE = "The food was delicious and the staff were wonderful."


def test_deleting_the_top_credited_words_lowers_the_prediction_more_than_random_words(trained_sentiment, sst2_dev):
    result = comprehensiveness([trained_sentiment], held_out_sentences(sst2_dev, SAMPLE), k=3, seed=0)
    print(f"\nfaithfulness (ERASER comprehensiveness, top-3 vs 3 random words): {result.wins:.2f} of "
          f"{len(result.rows)} sentences; mean drop {result.mean_top:.3f} vs {result.mean_random:.3f}")
    assert len(result.rows) == SAMPLE
    assert result.wins >= 0.8, [r for r in result.rows if r["top"] <= r["random"]]
    assert result.mean_top > result.mean_random


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


@pytest.mark.parametrize("precision, tolerance", [("fp32", 2e-4), ("bf16", 1e-2)])
def test_the_map_is_the_drop_in_probability_when_each_word_is_deleted(trained_sentiment, monkeypatch, precision,
                                                                       tolerance):
    # bfloat16 batches (the default on CPUs that multiply them natively) move each drop by at most about 0.003 here
    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", precision)
    result = explain_ensemble([trained_sentiment], {"text": POSITIVE})
    words = POSITIVE.split()
    for i, w in enumerate(result["words"]):
        text = " ".join(x for j, x in enumerate(words) if j != i)
        drop = result["probability"] - trained_sentiment.predict([{"text": text}])[0]["probs"]["positive"]
        assert w["score"] * result["peak"] == pytest.approx(drop, abs=tolerance), w["word"]
