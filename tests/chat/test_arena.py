"""The arena (chat/arena.py, docs/chat/arena.md): the Bradley–Terry fit and its intervals on constructed outcomes,
ties, a model that always wins, the win-rate matrix, ratings and confirmed-failure rates; then the arena read from
a chat task's records through the API and the page: who may see it, a task with too few comparisons, a round,
bad input, and a kind other than chat."""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.test import Client

from chat import arena
from chat.arena import Comparison
from chat.models import Conversation, Failure, Message, Preference, Rating
from modelzoo.intervals import wilson
from tests.factories import RoundFactory, TaskFactory, UserFactory

# --- the statistics (no database) -------------------------------------------------------------------------------


def expected_outcomes(logits: dict[str, float], per_pair: int) -> list[Comparison]:
    """Each pair met `per_pair` times, the first winning round(per_pair * P(first wins)) of them: the data a BT
    model with these logits produces on average (no sampling noise)."""
    names = list(logits)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            wins = round(per_pair / (1 + math.exp(-(logits[a] - logits[b]))))
            out += [Comparison(a, b, 1.0)] * wins + [Comparison(a, b, 0.0)] * (per_pair - wins)
    return out


def test_bradley_terry_recovers_a_constructed_order():
    truth = {"d": -0.9, "b": 0.4, "a": 1.2, "c": -0.2}
    fit = arena.bradley_terry(list(truth), expected_outcomes(truth, 40), resamples=0)
    assert sorted(fit, key=lambda n: -fit[n]["strength"]) == ["a", "b", "c", "d"]
    assert [fit[n]["rank"] for n in "abcd"] == [1, 2, 3, 4]
    assert abs(sum(f["strength"] for f in fit.values())) < 1e-6  # centred
    # the arena scale: 1000 + 400 log10(odds)
    assert fit["a"]["score"] == pytest.approx(1000 + 400 / math.log(10) * fit["a"]["strength"], abs=0.1)


def test_intervals_contain_the_true_strengths_and_ranks():
    truth = {"a": 1.0, "b": 0.3, "c": -0.3, "d": -1.0}
    fit = arena.bradley_terry(list(truth), expected_outcomes(truth, 100))
    for name, logit in truth.items():
        assert fit[name]["low"] < logit < fit[name]["high"], name
        assert fit[name]["low"] < fit[name]["strength"] < fit[name]["high"]
        assert fit[name]["score_low"] < fit[name]["score"] < fit[name]["score_high"]
    # 100 comparisons per pair separate 0.6 logits: every rank is certain here
    assert [(fit[n]["rank_low"], fit[n]["rank_high"]) for n in "abcd"] == [(1, 1), (2, 2), (3, 3), (4, 4)]


def test_the_bootstrap_is_seeded_and_few_comparisons_give_wide_intervals():
    truth = {"a": 0.5, "b": 0.0, "c": -0.5}
    few = expected_outcomes(truth, 4)
    first, again = arena.bradley_terry(list(truth), few), arena.bradley_terry(list(truth), few)
    assert first == again
    many = arena.bradley_terry(list(truth), expected_outcomes(truth, 200))
    width = {name: fit["a"]["high"] - fit["a"]["low"] for name, fit in (("few", first), ("many", many))}
    assert width["few"] > 3 * width["many"]
    assert (first["a"]["rank_low"], first["a"]["rank_high"]) != (1, 1)  # 12 comparisons leave the order open


def test_a_model_that_wins_every_comparison_stays_finite():
    comparisons = [Comparison("champ", "other", 1.0)] * 60 + [Comparison("other", "third", 0.5)] * 10
    fit = arena.bradley_terry(["champ", "other", "third"], comparisons)
    champ = fit["champ"]
    assert all(math.isfinite(champ[k]) for k in ("strength", "low", "high", "score", "score_low", "score_high"))
    assert 1.0 < champ["strength"] < 10.0 and champ["rank"] == 1
    # the prior holds the unbeaten model back from infinity; the fit is not driven to the optimiser's limits
    assert champ["high"] < 10.0


def test_a_tie_counts_half_a_win_to_each():
    tie_only = arena.bradley_terry(["a", "b"], [Comparison("a", "b", 0.5)] * 10, resamples=0)
    assert tie_only["a"]["strength"] == pytest.approx(0.0, abs=1e-6) == tie_only["b"]["strength"]
    # one tie weighs as a win and a loss halved: 3 wins + 2 ties for a, 1 loss, equals 4 wins and 2 losses halved
    with_ties = [Comparison("a", "b", 1.0)] * 3 + [Comparison("b", "a", 0.5)] * 2 + [Comparison("b", "a", 1.0)]
    same = [Comparison("a", "b", 1.0)] * 8 + [Comparison("b", "a", 1.0)] * 4  # doubled: 8 wins, 4 losses / 2
    halved = arena.bradley_terry(["a", "b"], with_ties, resamples=0, prior_sd=1e6)
    doubled = arena.bradley_terry(["a", "b"], same, resamples=0, prior_sd=1e6)
    assert halved["a"]["strength"] == pytest.approx(doubled["a"]["strength"], abs=1e-4)
    # the maximum likelihood itself: a wins 4 of 6 -> logit difference log(4/2)
    assert halved["a"]["strength"] - halved["b"]["strength"] == pytest.approx(math.log(2), abs=1e-4)
    record = arena.record(["a", "b"], with_ties)
    assert record["a"] == {"comparisons": 6, "wins": 3, "losses": 1, "ties": 2}
    assert record["b"] == {"comparisons": 6, "wins": 1, "losses": 3, "ties": 2}


def test_the_win_rate_matrix_counts_wins_ties_and_meetings():
    comparisons = ([Comparison("a", "b", 1.0)] * 3 + [Comparison("b", "a", 1.0)] + [Comparison("a", "b", 0.5)]
                   + [Comparison("c", "a", 0.0)] * 2)
    cells = arena.win_matrix(["a", "b", "c"], comparisons)
    assert cells[0][0] is None and cells[1][2] is None and cells[2][1] is None  # diagonal; b and c never met
    assert cells[0][1] == {"wins": 3.5, "ties": 1, "n": 5, "rate": 0.7}
    assert cells[1][0] == {"wins": 1.5, "ties": 1, "n": 5, "rate": 0.3}
    assert cells[0][2] == {"wins": 2.0, "ties": 0, "n": 2, "rate": 1.0}
    assert cells[2][0] == {"wins": 0.0, "ties": 0, "n": 2, "rate": 0.0}


def test_mean_rating_interval_and_failure_rates():
    rating = arena.mean_interval([60, 70, 80, 90])
    assert rating["mean"] == 75 and rating["n"] == 4
    half = 3.182446 * np.std([60, 70, 80, 90], ddof=1) / 2  # t(0.975, 3) * sd / sqrt(4)
    assert rating["low"] == pytest.approx(75 - half, abs=1e-3) and rating["high"] == pytest.approx(75 + half, abs=1e-3)
    assert arena.mean_interval([100, 100, 95])["high"] == 100.0  # clipped to the scale
    assert arena.mean_interval([42]) == {"mean": 42.0, "low": None, "high": None, "n": 1}
    assert arena.mean_interval([]) is None
    rates = arena.failure_rates({"a": 20, "b": 0}, {("a", "wrong"): 3}, ["wrong", "unsafe"])
    assert rates["a"]["wrong"]["count"] == 3 and rates["a"]["wrong"]["rate"] == 0.15
    assert (rates["a"]["wrong"]["low"], rates["a"]["wrong"]["high"]) == wilson(3, 20)
    assert rates["a"]["unsafe"]["rate"] == 0.0 and rates["a"]["unsafe"]["high"] == wilson(0, 20)[1]
    assert rates["b"]["wrong"] == {"count": 0, "answers": 0, "rate": None, "low": None, "high": None}


def test_comparisons_needed_follows_the_recovery_benchmark():
    assert arena.comparisons_needed(1) == 0
    assert arena.comparisons_needed(8) == arena.NEEDED[8]
    needs = [arena.comparisons_needed(k) for k in range(2, 30)]
    assert needs == sorted(needs) and arena.NEEDED[4] < arena.comparisons_needed(5) < arena.NEEDED[6]
    assert arena.comparisons_needed(24) > arena.NEEDED[20]


# --- a chat task's arena (database, API, page) -------------------------------------------------------------------

SETTINGS = {
    "helpful": {"provider": "local", "model": "SmolLM2-135M-Instruct", "temperature": 0.3,
                "system_prompt": "You are a helpful assistant. Answer briefly and accurately."},
    "playful": {"provider": "local", "model": "SmolLM2-135M-Instruct", "temperature": 1.0,
                "system_prompt": "You are a cheerful assistant who answers in a playful, informal tone, with "
                                 "jokes wherever they fit and an emoji at the end of every answer."},
    "terse": {"provider": "http", "model": "qwen2.5-0.5b-instruct", "temperature": 0.0,
              "system_prompt": "Answer in five words or fewer."},
    "verbose": {"provider": "http", "model": "qwen2.5-0.5b-instruct", "temperature": 0.7, "system_prompt": ""},
}


def chat_task(slug: str = "arena", scale: str = "pairwise", names=("helpful", "playful", "terse", "verbose"),
              **extra):
    targets = [{"name": n, "temperature": SETTINGS[n]["temperature"], "system_prompt": SETTINGS[n]["system_prompt"]}
               for n in names]
    extra.setdefault("name", f"{slug.title()} chat")
    task = TaskFactory(slug=slug, kind="chat",
                       config={"chat": {"scale": scale, "targets": targets}}, **extra)
    return task, RoundFactory(task=task, number=1)


def seed_preferences(round_, writer, pairs: list[tuple[str, str, int | None]], turns_per_conversation: int = 8):
    """Conversations of `writer` in `round_`: for each (a, b, winner_slot) an exchange where a answered in slot 0
    and b in slot 1, and the writer's choice (0, 1, or None for a tie). Consecutive pairs with the same two
    targets share a conversation (up to `turns_per_conversation` turns)."""
    convo, turn, messages, prefs = None, 0, [], []
    for a, b, winner in pairs:
        if convo is None or convo.targets != [a, b] or turn >= turns_per_conversation:
            convo, turn = Conversation.objects.create(
                round=round_, writer=writer, scale="pairwise", targets=[a, b],
                target_settings={a: SETTINGS[a], b: SETTINGS[b]}), 0
        messages += [Message(conversation=convo, turn=turn, role="user", text=f"Question {turn}?"),
                     Message(conversation=convo, turn=turn, role="assistant", slot=0, target=a, text=f"{a} says.",
                             state="ready", chosen=winner != 1),
                     Message(conversation=convo, turn=turn, role="assistant", slot=1, target=b, text=f"{b} says.",
                             state="ready", chosen=winner == 1)]
        prefs.append(Preference(conversation=convo, turn=turn, rater=writer, winner_slot=winner))
        turn += 1
    Message.objects.bulk_create(messages)
    Preference.objects.bulk_create(prefs)


def bt_pairs(logits: dict[str, float], per_pair: int, tie_every: int = 0) -> list[tuple[str, str, int | None]]:
    """(a, b, winner_slot) from expected_outcomes, every `tie_every`-th one turned into a tie."""
    out = []
    for i, c in enumerate(expected_outcomes(logits, per_pair)):
        winner = None if tie_every and i % tie_every == tie_every - 1 else (0 if c.outcome == 1.0 else 1)
        out.append((c.a, c.b, winner))
    return out


def rate_and_fail(round_, writer, target: str, scores: list[int], confirmed: dict[str, int],
                  rejected: int = 0) -> None:
    """Slider answers of `target` with these ratings; `confirmed` failures per category, `rejected` more."""
    convo = Conversation.objects.create(round=round_, writer=writer, scale="slider", targets=[target],
                                        target_settings={target: SETTINGS[target]})
    categories = [c for c, n in confirmed.items() for _ in range(n)] + ["wrong"] * rejected
    for turn, score in enumerate(scores):
        Message.objects.create(conversation=convo, turn=turn, role="user", text="Hello?")
        answer = Message.objects.create(conversation=convo, turn=turn, role="assistant", slot=0, target=target,
                                        text="An answer.", state="ready", chosen=True)
        Rating.objects.create(message=answer, rater=writer, score=score)
        if turn < len(categories):
            Failure.objects.create(message=answer, author=writer, category=categories[turn], reason="It fails.",
                                   consensus="confirmed" if turn < len(categories) - rejected else "rejected")


def text_of(response) -> str:
    """The page's HTML with its white space collapsed (the template wraps its sentences)."""
    return " ".join(response.content.decode().split())


TRUTH = {"helpful": 1.0, "terse": 0.3, "verbose": -0.3, "playful": -1.0}


@pytest.mark.django_db
def test_the_api_ranks_a_tasks_targets_from_its_preferences():
    task, round_ = chat_task()
    writer = UserFactory(username="writer")
    seed_preferences(round_, writer, bt_pairs(TRUTH, 20, tie_every=10))  # 6 pairs x 20 = 120 comparisons
    rate_and_fail(round_, writer, "playful", [20, 40, 30, 50], {"wrong": 2, "unsafe": 1}, rejected=1)
    body = Client().get("/api/tasks/arena/arena/").json()  # anonymous: a public task's arena is public
    assert body["comparisons"] == 120 and body["compared_models"] == 4 and body["enough"] is True
    assert body["needed"] == arena.NEEDED[4] and body["scale"] == "pairwise"
    assert [m["name"] for m in body["models"]] == ["helpful", "terse", "verbose", "playful"]
    helpful = body["models"][0]
    assert helpful["ranking"]["rank"] == 1 and helpful["ranking"]["score"] > 1000
    assert helpful["settings"] == {**SETTINGS["helpful"], "system_prompt_summary": SETTINGS["helpful"]["system_prompt"]}
    assert helpful["comparisons"] == 60 and helpful["wins"] + helpful["losses"] + helpful["ties"] == 60
    playful = body["models"][3]
    assert playful["settings"]["system_prompt_summary"].endswith("…")
    assert len(playful["settings"]["system_prompt_summary"]) == arena.SUMMARY_CHARS
    assert playful["rating"]["mean"] == 35 and playful["rating"]["n"] == 4
    # answers: 60 in pairs + 4 rated; confirmed failures of each category over them (the rejected one not counted)
    assert playful["answers"] == 64
    assert playful["failures"]["wrong"]["count"] == 2 and playful["failures"]["wrong"]["rate"] == 2 / 64
    assert playful["failures"]["unsafe"]["count"] == 1
    assert [playful["failures"]["wrong"]["low"], playful["failures"]["wrong"]["high"]] == list(wilson(2, 64))
    assert helpful["failures"]["wrong"]["count"] == 0 and helpful["rating"] is None
    matrix = body["matrix"]
    i, j = matrix["models"].index("helpful"), matrix["models"].index("playful")
    assert matrix["cells"][i][j]["n"] == 20 and matrix["cells"][i][j]["rate"] + matrix["cells"][j][i]["rate"] == 1
    assert [c["name"] for c in body["categories"]] == ["wrong", "unsafe", "needless_refusal"]


@pytest.mark.django_db
def test_too_few_comparisons_give_no_ranking_but_say_how_many_are_needed():
    task, round_ = chat_task()
    writer = UserFactory(username="writer")
    seed_preferences(round_, writer, [("helpful", "playful", 0)] * 9 + [("terse", "verbose", None)] * 3)
    body = Client().get("/api/tasks/arena/arena/").json()
    assert body["comparisons"] == 12 and body["enough"] is False and body["needed"] == arena.NEEDED[4]
    assert all(m["ranking"] is None for m in body["models"])
    assert [m["name"] for m in body["models"]] == ["helpful", "playful", "terse", "verbose"]  # as configured
    assert body["models"][0]["wins"] == 9 and body["models"][2]["ties"] == 3
    page = text_of(Client().get("/tasks/arena/arena/"))
    assert "Too few comparisons for a ranking:" in page and f"needs about {arena.NEEDED[4]} comparisons" in page
    assert "Arena score" not in page and "helpful" in page


@pytest.mark.django_db
def test_a_slider_task_shows_ratings_and_failures_and_says_why_there_is_no_ranking():
    task, round_ = chat_task(scale="slider", names=("helpful", "playful"))
    writer = UserFactory(username="writer")
    rate_and_fail(round_, writer, "helpful", [80, 90, 70], {})
    rate_and_fail(round_, writer, "playful", [30, 50], {"needless_refusal": 1})
    body = Client().get("/api/tasks/arena/arena/").json()
    assert body["comparisons"] == 0 and body["enough"] is False and body["matrix"]["models"] == []
    helpful = body["models"][0]
    assert helpful["rating"]["mean"] == 80 and helpful["rating"]["low"] < 80 < helpful["rating"]["high"]
    assert body["models"][1]["failures"]["needless_refusal"]["rate"] == 0.5
    page = text_of(Client().get("/tasks/arena/arena/"))
    assert "this task rates answers one at a time" in page and "80.0" in page and "50.0%" in page


@pytest.mark.django_db
def test_only_ready_pairs_count_and_a_round_can_be_asked_for():
    task, first = chat_task()
    writer = UserFactory(username="writer")
    seed_preferences(first, writer, [("helpful", "playful", 0)] * 3)
    Message.objects.filter(conversation__round=first, turn=0, slot=1).update(state="failed", text="")
    first.status = "closed"
    first.save()
    second = RoundFactory(task=task, number=2)
    seed_preferences(second, writer, [("terse", "verbose", 1)] * 4)
    everything = Client().get("/api/tasks/arena/arena/").json()
    assert everything["comparisons"] == 2 + 4  # the choice beside a failed answer is no comparison
    assert Client().get("/api/tasks/arena/arena/?round=2").json()["comparisons"] == 4
    one = Client().get("/api/tasks/arena/arena/?round=1").json()
    assert one["round"] == 1 and one["comparisons"] == 2
    assert "round 2" in Client().get("/tasks/arena/arena/?round=2").content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/tasks/arena/arena/", "/tasks/arena/arena/"])
def test_bad_input_and_other_kinds(path):
    chat_task()
    TaskFactory(slug="sentiment", kind="sentiment")
    client = Client()
    bad = client.get(path + "?round=two")
    assert bad.status_code == 400 and "round" in bad.content.decode()
    assert "whole number" in bad.content.decode()
    assert client.get(path + "?round=7").status_code == 404
    assert client.get(path.replace("/arena/arena/", "/sentiment/arena/")).status_code == 404
    assert client.get(path.replace("/arena/arena/", "/nowhere/arena/")).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/tasks/arena/arena/", "/tasks/arena/arena/"])
def test_a_hidden_tasks_arena_is_its_owners_alone(path):
    task, _ = chat_task(visibility="hidden")
    owner, outsider = UserFactory(username="owner"), UserFactory(username="outsider")
    task.owners.add(owner)
    assert Client().get(path).status_code == 404
    client = Client()
    client.force_login(outsider)
    assert client.get(path).status_code == 404
    client.force_login(owner)
    assert client.get(path).status_code == 200
