"""The consensus rule as a pure function: quorum, adaptive, overrides, disputes."""

from tasks.kinds.base import ValidationSettings
from validation.consensus import Vote, decide

QUORUM = ValidationSettings(mode="quorum", quorum=3)
ADAPTIVE = ValidationSettings(mode="adaptive", quorum=3, adaptive_min=2)
OK, FLAG = Vote("correct"), Vote("flagged")


def wrong(label: str) -> Vote:
    return Vote("incorrect", label)


def test_no_votes_needs_a_full_quorum():
    assert decide([], QUORUM, "positive").needed == 3
    assert decide([], ADAPTIVE, "positive").needed == 2


def test_quorum_of_matching_correct_votes_verifies_with_the_writers_label():
    decision = decide([OK, OK, OK], QUORUM, "positive")
    assert (decision.state, decision.label, decision.needed) == ("verified", "positive", 0)


def test_two_matching_votes_are_not_enough_for_a_quorum_of_three():
    decision = decide([OK, OK], QUORUM, "positive")
    assert decision.state == "unvalidated" and decision.needed == 1


def test_quorum_of_incorrect_votes_rejects_with_the_corrected_label():
    decision = decide([wrong("negative")] * 3, QUORUM, "positive")
    assert (decision.state, decision.label) == ("rejected", "negative")


def test_incorrect_votes_with_different_labels_do_not_match():
    decision = decide([wrong("negative"), wrong("neutral"), wrong("negative")], QUORUM, "positive")
    assert decision.state == "unvalidated" and decision.needed == 1


def test_quorum_of_flags_flags_the_example():
    decision = decide([FLAG, FLAG, FLAG], QUORUM, "positive")
    assert (decision.state, decision.label) == ("flagged", None)


def test_disagreement_asks_for_more_votes_then_decides_by_quorum():
    votes = [OK, wrong("negative"), OK, wrong("negative")]
    assert decide(votes, QUORUM, "positive").needed == 1
    assert decide([*votes, OK], QUORUM, "positive").state == "verified"


def test_disputed_once_no_outcome_can_reach_the_quorum_within_the_cap():
    # cap is 2 * quorum - 1 = 5 votes; after 4 split votes no outcome can reach 3
    assert decide([OK, FLAG, wrong("negative"), wrong("neutral")], QUORUM, "positive").state == "disputed"
    assert decide([OK, FLAG, OK, FLAG, wrong("negative")], QUORUM, "positive").state == "disputed"


def test_adaptive_stops_early_when_the_first_votes_agree():
    decision = decide([OK, OK], ADAPTIVE, "positive")
    assert decision.state == "verified"


def test_adaptive_asks_for_more_on_disagreement():
    decision = decide([OK, FLAG], ADAPTIVE, "positive")
    assert decision.state == "unvalidated" and decision.needed == 2
    assert decide([OK, FLAG, OK], ADAPTIVE, "positive").state == "unvalidated"
    assert decide([OK, FLAG, OK, OK], ADAPTIVE, "positive").state == "verified"


def test_adaptive_first_vote_needs_one_more_to_stop():
    assert decide([OK], ADAPTIVE, "positive").needed == 1


def test_an_override_decides_alone():
    decision = decide([Vote("incorrect", "negative", override=True)], QUORUM, "positive")
    assert (decision.state, decision.label) == ("rejected", "negative")


def test_an_override_beats_a_crowd_quorum_and_the_latest_override_wins():
    votes = [OK, OK, OK, Vote("flagged", override=True)]
    assert decide(votes, QUORUM, "positive").state == "flagged"
    votes.append(Vote("correct", override=True))
    assert decide(votes, QUORUM, "positive").state == "verified"


def test_an_override_resolves_a_dispute():
    votes = [OK, FLAG, wrong("negative"), wrong("neutral"), Vote("correct", override=True)]
    assert decide(votes, QUORUM, "positive").state == "verified"


def test_quorum_of_one_decides_with_the_first_vote():
    assert decide([FLAG], ValidationSettings(quorum=1), "positive").state == "flagged"
