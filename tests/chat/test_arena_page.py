"""The arena page in real Chromium at 1400 and 420 px (docs/chat/arena.md): four named models ranked from 120
seeded pairwise choices with their arena score, its interval and their rank's, their settings, the win-rate
matrix, mean ratings and confirmed-failure rates; no part of it wider than a phone. Then a task with too few
comparisons says how many it needs instead of ranking. Pictures: var/screenshots/arena-<width>.png (docs/gallery/
holds copies)."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from chat import arena
from tests.chat.test_arena import TRUTH, bt_pairs, chat_task, rate_and_fail, seed_preferences
from tests.factories import UserFactory
from tests.site.screens import WIDTHS, shot, sized, too_wide

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def cells(browser, selector: str) -> list[list[str]]:
    return [[cell.text for cell in row.find_elements(By.CSS_SELECTOR, "th, td")]
            for row in browser.find_elements(By.CSS_SELECTOR, selector)]


def test_the_arena_ranks_named_models_with_intervals_at_both_widths(browser):
    task, round_ = chat_task(slug="arena", name="Arena chat")
    writer = UserFactory(username="writer")
    seed_preferences(round_, writer, bt_pairs(TRUTH, 20, tie_every=10))
    rate_and_fail(round_, writer, "playful", [20, 45, 30, 50, 35], {"wrong": 2, "unsafe": 1}, rejected=1)
    rate_and_fail(round_, writer, "helpful", [80, 85, 90, 70], {"needless_refusal": 1})
    data = arena.board(task)
    ranked = [m["name"] for m in data["models"]]
    assert ranked == ["helpful", "terse", "verbose", "playful"]

    for width in WIDTHS:
        with sized(browser, width):
            browser.go("/tasks/arena/arena/")
            assert browser.find_element(By.TAG_NAME, "h1").text == "Arena chat arena"
            assert not browser.find_elements(By.ID, "arena-notice")
            lead = browser.find_element(By.CSS_SELECTOR, "p.lead").text
            assert "from 120 pairwise choices in every round" in lead and "the models are named" in lead
            rows = browser.find_elements(By.CSS_SELECTOR, "#arena-models tbody tr")
            assert [r.get_attribute("data-model") for r in rows] == ranked
            top = rows[0]
            helpful = data["models"][0]["ranking"]
            score = top.find_element(By.CSS_SELECTOR, ".arena-score").text.split("\n")
            assert score == [f"{helpful['score']:.0f}", f"{helpful['score_low']:.0f}–{helpful['score_high']:.0f}"]
            assert top.find_element(By.CSS_SELECTOR, ".rank").text == "1"
            settings = top.find_element(By.CSS_SELECTOR, ".settings").text
            assert "local · SmolLM2-135M-Instruct · temperature 0.3" in settings
            assert "“You are a helpful assistant. Answer briefly and accurately.”" in settings
            rating = top.find_element(By.CSS_SELECTOR, ".rating").text
            assert rating.startswith("81.2") and "4 ratings" in rating
            last = rows[3]
            assert last.find_element(By.CSS_SELECTOR, ".record").text.endswith("60 comparisons")
            assert "…" in last.find_element(By.CSS_SELECTOR, ".prompt").text  # the long prompt, summarised
            # the matrix: row beats column, with wins/meetings
            matrix = cells(browser, "#win-matrix tbody tr")
            assert [line[0] for line in matrix] == ranked
            i, j = ranked.index("helpful"), ranked.index("playful")
            cell = data["matrix"]["cells"][i][j]
            assert matrix[i][j + 1].split("\n") == [f"{100 * cell['rate']:.0f}%", f"{cell['wins']:g}/20"]
            assert matrix[i][i + 1] == "—"
            failures = {line[0]: line[1:] for line in cells(browser, "#arena-failures tbody tr")}
            assert failures["playful"][0] == "65"  # 60 answers in pairs, 5 rated
            low, high = data["models"][3]["failures"]["wrong"]["low"], data["models"][3]["failures"]["wrong"]["high"]
            assert failures["playful"][1].split("\n") == [f"{100 * 2 / 65:.1f}%",
                                                          f"2 of 65 · {100 * low:.1f}%–{100 * high:.1f}%"]
            assert failures["helpful"][3].split("\n")[0] == f"{100 / 64:.1f}%"  # needless refusal
            assert too_wide(browser) is None
            shot(browser, "arena", width)


def test_too_few_comparisons_say_how_many_the_ranking_needs(browser):
    task, round_ = chat_task(slug="early")
    writer = UserFactory(username="writer")
    seed_preferences(round_, writer, [("helpful", "playful", 0)] * 6 + [("terse", "helpful", None)] * 2)
    with sized(browser, 420):
        browser.go("/tasks/early/arena/")
        notice = browser.find_element(By.ID, "arena-notice").text
        assert "Too few comparisons for a ranking: 8 so far between 4 models" in notice
        assert f"needs about {arena.NEEDED[4]} comparisons" in notice
        rows = browser.find_elements(By.CSS_SELECTOR, "#arena-models tbody tr")
        assert [r.get_attribute("data-model") for r in rows] == ["helpful", "playful", "terse", "verbose"]
        assert not browser.find_elements(By.CSS_SELECTOR, "#arena-models .arena-score")
        assert too_wide(browser) is None
