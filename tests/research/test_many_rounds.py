"""The loop over many rounds (research/simulate_rounds/arms.py) on a tiny synthetic pool: each arm accepts what it
should (standard: candidates as they come; static: those round 1's model gets wrong; dynamic: those the current
model gets wrong), the training data grows by the budget each round, and the curves and the report have one point
per round per arm."""

from __future__ import annotations

import numpy as np
import pytest

from research.simulate_rounds import arms_report
from research.simulate_rounds.arms import ARMS, Config, Data, run_arm, run_experiment

ROUNDS, BUDGET, SEED_SIZE = 3, 20, 40


def blobs(n: int, seed: int, noise: float = 1.2) -> Data:
    """Two overlapping Gaussian classes in 6 dimensions: a linear head gets roughly one in five wrong."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    x = rng.normal(0, noise, (n, 6)).astype(np.float32)
    x[:, 0] += np.where(labels == 1, 1.0, -1.0)
    x[:, 1] += 0.5 * x[:, 0]
    return Data(x, labels.astype(np.int64))


@pytest.fixture(scope="module")
def pool() -> Data:
    return blobs(1500, 0)


@pytest.fixture(scope="module")
def held() -> dict[str, Data]:
    return {"near": blobs(200, 1), "far": blobs(150, 2, noise=2.0)}


@pytest.fixture(scope="module")
def config() -> Config:
    return Config(rounds=ROUNDS, budget=BUDGET, seed_size=SEED_SIZE, seeds=(0, 1), steps=150)


@pytest.fixture(scope="module")
def runs(pool, held, config):
    return {arm: run_arm(arm, pool, held, 0, config) for arm in ARMS}


def stream(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n)  # the order candidates come in for that seed


def next_fooling(model, pool: Data, order: np.ndarray, start: int, budget: int) -> tuple[list[int], int]:
    """What an adversarial arm should take: the next `budget` candidates of the stream the model gets wrong."""
    wrong = model.predict(pool.x[order[start:]]) != pool.labels[order[start:]]
    positions = np.flatnonzero(wrong)[:budget]
    return [int(order[start + p]) for p in positions], int(positions[-1]) + 1


def test_standard_collection_takes_the_candidates_as_they_come(runs, pool):
    order = stream(0, len(pool))
    run = runs["standard"]
    assert run.rounds[0].accepted == [int(i) for i in order[:SEED_SIZE]]  # round 0: the seed set
    for r in range(1, ROUNDS + 1):
        start = SEED_SIZE + (r - 1) * BUDGET
        assert run.rounds[r].accepted == [int(i) for i in order[start:start + BUDGET]]
        assert run.rounds[r].drawn == BUDGET and run.rounds[r].against is None
    fooled = [run.models[r - 1].predict(pool.x[run.rounds[r].accepted]) != pool.labels[run.rounds[r].accepted]
              for r in range(1, ROUNDS + 1)]
    assert 0 < np.mean(np.concatenate(fooled)) < 0.6  # some fool the model, most do not: taken all the same


def test_static_adversarial_takes_what_fools_round_1s_model(runs, pool):
    order, run = stream(0, len(pool)), runs["static"]
    first = run.models[0]  # trained on the seed set: the model writers face in round 1
    start = SEED_SIZE
    for r in range(1, ROUNDS + 1):
        expected, drawn = next_fooling(first, pool, order, start, BUDGET)
        assert run.rounds[r].accepted == expected and run.rounds[r].drawn == drawn > BUDGET
        assert run.rounds[r].against == 0
        start += drawn


def test_dynamic_adversarial_takes_what_fools_the_current_model(runs, pool):
    order, run = stream(0, len(pool)), runs["dynamic"]
    start = SEED_SIZE
    for r in range(1, ROUNDS + 1):
        current = run.models[r - 1]  # retrained after the previous round
        expected, drawn = next_fooling(current, pool, order, start, BUDGET)
        assert run.rounds[r].accepted == expected and run.rounds[r].drawn == drawn
        assert run.rounds[r].against == r - 1
        start += drawn
    # Round 1 is the same for both adversarial arms (both face round 1's model) ...
    assert run.rounds[1].accepted == runs["static"].rounds[1].accepted
    # ... and later rounds differ: the current model is not round 1's (it was retrained on what fooled it).
    later = run.rounds[ROUNDS].accepted
    assert (run.models[0].predict(pool.x[later]) == pool.labels[later]).any()


def test_training_data_grows_by_the_budget_and_every_round_is_evaluated_on_the_same_sets(runs, held):
    for run in runs.values():
        assert [r.train_size for r in run.rounds] == [SEED_SIZE + k * BUDGET for k in range(ROUNDS + 1)]
        assert [m.round for m in run.models] == list(range(ROUNDS + 1))
        for r in run.rounds:
            assert set(r.accuracy) == set(held) and all(0 <= a <= 1 for a in r.accuracy.values())
            assert {h: len(c) for h, c in r.correct.items()} == {h: len(d) for h, d in held.items()}
    assert len({r.rounds[0].accuracy["near"] for r in runs.values()}) == 1  # round 0 is shared by the arms
    for run in runs.values():  # how often each round's model predicts what round 0's model predicted
        first = run.models[0].predict(held["far"].x)
        assert [r.agreement["far"] for r in run.rounds] == pytest.approx(
            [float((m.predict(held["far"].x) == first).mean()) for m in run.models])


def test_curves_have_one_point_per_round_per_arm_with_intervals_and_the_report_shows_them(pool, held, config,
                                                                                          tmp_path):
    experiment = run_experiment(pool, held, config, log=lambda m: None, in_domain="near")
    summary = experiment.summary()
    for h in held:
        for arm in ARMS:
            points = summary["curves"][h][arm]
            assert [p["round"] for p in points] == list(range(ROUNDS + 1))
            for p in points:
                assert p["low"] <= p["mean"] <= p["high"] and len(p["seeds"]) == 2
                assert p["wilson"]["n"] == len(held[h]) and p["wilson"]["low"] <= p["mean"] <= p["wilson"]["high"]
        for name in ("static", "dynamic", "dynamic_vs_static"):
            rows = summary["differences"][name][h]
            assert [r["round"] for r in rows] == list(range(ROUNDS + 1)) and rows[0]["mean"] == 0
            assert set(summary["crossings"][name][h]) == {"ahead_from", "significantly_ahead_from", "ahead_rounds",
                                                               "behind_rounds"}
    standard = summary["curves"]["near"]["standard"]
    assert all(p["drawn_per_accepted"] == 1 for p in standard[1:])
    assert all(p["drawn_per_accepted"] > 1 for p in summary["curves"]["near"]["static"][1:])
    text = arms_report.markdown(summary)
    for h in held:
        table = text.split(f"**{h}**")[1].split("\n\n")[1]
        assert len(table.splitlines()) == 2 + ROUNDS + 1  # header, rule, one row per round
    assert "## Where the arms cross" in text and "dynamic − standard" in text
    # Out of domain against in domain: each adversarial arm's gap to standard on "far" minus its gap on "near".
    assert set(summary["out_of_domain"]) == {"static", "dynamic"} and set(summary["out_of_domain"]["dynamic"]) == {"far"}
    by_round = summary["differences"]["dynamic"]
    last = summary["out_of_domain"]["dynamic"]["far"]["last_round"]
    assert last["mean"] == pytest.approx(by_round["far"][-1]["mean"] - by_round["near"][-1]["mean"])
    assert "## Out of domain against in domain" in text and "| dynamic | far |" in text
    figure = arms_report.figure(summary, tmp_path / "arms.svg")
    assert figure.read_text().lstrip().startswith("<?xml") and "standard collection" in figure.read_text()


def test_an_arm_that_runs_out_of_pool_stops_and_says_so(held):
    small = blobs(120, 3)
    run = run_arm("dynamic", small, held, 0, Config(rounds=5, budget=30, seed_size=40, steps=100))
    assert run.exhausted.startswith("round ") and "ran out" in run.exhausted
    assert len(run.rounds) < 6 and len(run.models) == len(run.rounds)
    with pytest.raises(ValueError, match="unknown arm"):
        run_arm("random", small, held, 0, Config())
