from __future__ import annotations

import pytest

from exports.agreement import fleiss_kappa, round_agreement
from tests.exports.conftest import make_example, vote


def test_fleiss_kappa_matches_the_textbook_example():
    # Fleiss (1971)-style check: 3 raters, 4 items, perfect agreement on a balanced split -> kappa 1.
    perfect = [{"correct": 3}, {"incorrect": 3}, {"correct": 3}, {"incorrect": 3}]
    assert fleiss_kappa(perfect).kappa == 1.0
    # Wikipedia's worked example reduced to two categories: computed by hand.
    items = [{"a": 2, "b": 1}, {"a": 3}, {"a": 1, "b": 2}, {"b": 3}]
    result = fleiss_kappa(items)
    # P_i = 1/3, 1, 1/3, 1 -> P = 2/3; p_a = p_b = 1/2 -> Pe = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert result.kappa == pytest.approx(1 / 3, abs=1e-4) and result.items == 4 and result.votes == 12


def test_examples_with_fewer_than_two_votes_are_left_out():
    assert fleiss_kappa([{"correct": 1}, {}]).kappa is None


@pytest.mark.django_db
def test_round_agreement_reads_validation_rows(open_round):
    a, b, c = (make_example(open_round) for _ in range(3))
    vote(a, "correct", "correct")
    vote(b, "incorrect", "incorrect")
    vote(c, "flagged")
    result = round_agreement(open_round)
    assert result.items == 2 and result.kappa == 1.0
