import pytest

from zoo.aggregation import STRATEGIES, best_mean_span, get_strategy, majority_vote, mean_probs


def cls(label, **probs):
    return {"label": label, "probs": probs}


def span(text, start, score, candidates=None):
    out = {"text": text, "start": start, "end": start + len(text), "score": score}
    if candidates is not None:
        out["candidates"] = candidates
    return out


def test_mean_probs_can_overrule_the_majority():
    members = [cls("pos", pos=0.55, neg=0.45), cls("pos", pos=0.55, neg=0.45), cls("neg", pos=0.02, neg=0.98)]
    result = mean_probs(members)
    assert result["label"] == "neg"
    assert result["probs"] == pytest.approx({"pos": 0.04 + 0.33 + 0.004 / 1, "neg": 0.626}, abs=0.01)
    assert majority_vote(members)["label"] == "pos"


def test_mean_probs_of_one_member_is_that_member():
    member = cls("neutral", positive=0.2, negative=0.1, neutral=0.7)
    assert mean_probs([member]) == member


def test_best_mean_span_prefers_the_span_members_agree_on():
    a = span("in 1889", 30, 0.5, [span("in 1889", 30, 0.5), span("1889", 33, 0.4)])
    b = span("Paris", 50, 0.6, [span("Paris", 50, 0.6), span("1889", 33, 0.35)])
    c = span("1889", 33, 0.45, [span("1889", 33, 0.45), span("in 1889", 30, 0.1)])
    result = best_mean_span([a, b, c])
    assert (result["text"], result["start"], result["end"]) == ("1889", 33, 37)
    assert result["score"] == pytest.approx((0.4 + 0.35 + 0.45) / 3)


def test_best_mean_span_without_candidates_uses_each_members_answer():
    result = best_mean_span([span("Paris", 50, 0.9), span("France", 57, 0.3)])
    assert result["text"] == "Paris"
    assert result["score"] == pytest.approx(0.45)


def test_strategies_are_looked_up_by_name():
    assert {"mean_probs", "best_mean_span", "majority_vote"} <= set(STRATEGIES)
    with pytest.raises(KeyError, match="unknown aggregation strategy"):
        get_strategy("median")
