"""Figures derived from the data: rates per round and task, leaderboard, agreement."""

import pytest

from tests.factories import ExampleFactory, RoundFactory, UserFactory
from validation import services, stats
from validation.stats import krippendorff_alpha


def test_krippendorff_alpha_matches_the_published_nominal_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal data: alpha = 0.743
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [[c[u] for c in coders if c[u] is not None] for u in range(12)]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=1e-3)


def test_alpha_is_one_for_perfect_agreement_with_variation_and_undefined_without():
    assert krippendorff_alpha([["a", "a"], ["b", "b", "b"]]) == 1.0
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None
    assert krippendorff_alpha([["a"]]) is None


def test_alpha_is_negative_for_systematic_disagreement():
    assert krippendorff_alpha([["a", "b"], ["b", "a"], ["a", "b"]]) < 0


def vote(user, example, verdict, **kw):
    services.submit_vote(user, example, verdict, **kw)


@pytest.fixture
def round_data(task, open_round, make_validator):
    """Round 1: 4 examples by two writers; 3 validators; one verified, one rejected, one flagged, one not fooled."""
    writer, other = UserFactory(username="writer"), UserFactory(username="other")
    v = [make_validator(f"v{i}") for i in range(3)]
    verified = ExampleFactory(round=open_round, author=writer)
    rejected = ExampleFactory(round=open_round, author=writer)
    flagged = ExampleFactory(round=open_round, author=other)
    ExampleFactory(round=open_round, author=other, fooled=False)
    for user in v:
        vote(user, verified, "correct")
    for user in v[:2]:
        vote(user, rejected, "incorrect", label="negative")
    vote(v[2], rejected, "correct")
    for user in v:
        vote(user, flagged, "flagged", reason="spam")
    return {"validators": v, "verified": verified, "rejected": rejected}


def test_round_and_task_figures(task, round_data, make_validator):
    fourth = make_validator("v3")
    vote(fourth, round_data["rejected"], "incorrect", label="negative")
    result = stats.task_stats(task)
    r1 = result["rounds"][0]
    assert (r1["collected"], r1["fooled"], r1["verified_fooled"], r1["rejected"], r1["flagged"]) == (4, 3, 1, 1, 1)
    assert r1["mer"] == 0.75 and r1["vmer"] == 0.25
    assert r1["rejection_rate"] == pytest.approx(1 / 3, abs=1e-4) and r1["flag_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert result["overall"]["collected"] == 4


def test_retracted_examples_do_not_count(task, open_round):
    ExampleFactory(round=open_round, retracted=True)
    assert stats.task_stats(task)["overall"]["collected"] == 0


def test_leaderboard_ranks_writers_by_verified_fooling_examples(task, round_data):
    board = stats.task_stats(task)["annotators"]
    assert [(row["rank"], row["username"]) for row in board] == [(1, "writer"), (2, "other")]
    assert board[0]["verified_fooled"] == 1 and board[1]["mer"] == 0.5


def test_each_validators_agreement_with_the_final_consensus(task, round_data, make_validator):
    vote(make_validator("v3"), round_data["rejected"], "incorrect", label="negative")
    rows = {row["username"]: row for row in stats.task_stats(task)["validators"]}
    assert rows["v0"]["agreement"] == 1.0
    assert rows["v2"]["decided"] == 3 and rows["v2"]["agreement"] == pytest.approx(2 / 3, abs=1e-4)


def test_agreement_per_round(task, round_data, make_validator):
    later = RoundFactory(task=task, number=2, status="draft")
    r = stats.task_stats(task)["rounds"]
    assert [row["round"] for row in r] == [1, 2]
    assert r[0]["agreement"]["units"] == 3 and r[0]["agreement"]["alpha"] is not None
    assert r[1]["agreement"] == {"alpha": None, "units": 0, "votes": 0}
    assert later.number == 2


def test_stats_api_returns_the_figures(api, task, round_data):
    response = api.get(f"/api/tasks/{task.slug}/stats/")
    assert response.status_code == 200
    assert set(response.data) == {"task", "overall", "rounds", "annotators", "validators"}
    assert response.data["rounds"][0]["vmer"] == 0.25


def test_figures_page_shows_leaderboard_and_agreement(client, task, round_data):
    page = client.get(f"/tasks/{task.slug}/figures/").content.decode()
    assert 'id="leaderboard"' in page and "writer" in page and 'id="validator-agreement"' in page
