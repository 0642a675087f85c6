"""In real Chromium, at 1400 and 420 px (issue 43, item 1): a viewer sets their own Dynascore weights on the
leaderboard, the board re-ranks (the small fast model overtakes the accurate big one, as in Dynaboard's example),
each row shows its rank under the owner's weights and how far it moved, the address carries the weights (the
"share this view" link), and "back to the owner's weights" restores the default. A prediction-file row is marked
"predictions only". Pictures: var/screenshots/leaderboard-weights-<width>.png (docs/gallery/ holds copies)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.rounds.test_dynaboard import add_predictions
from tests.rounds.test_dynaboard import task as board_task  # noqa: F401 - the fixture: big, mid and fast models
from tests.site.screens import WIDTHS, shot, sized, too_wide

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def ranked(browser) -> list[str]:
    return [row.find_elements(By.TAG_NAME, "td")[3 if moved_columns(browser) else 1].text.removesuffix(" predictions only")
            for row in browser.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr")]


def wait_for(browser, condition) -> None:
    """Until `condition(browser)` holds on the loaded page (elements of the page being left go stale)."""
    WebDriverWait(browser, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda b: b.execute_script("return document.readyState") == "complete" and condition(b))


def moved_columns(browser) -> bool:
    return bool(browser.find_elements(By.CSS_SELECTOR, "#leaderboard thead th[title^='rank with the owner']"))


def test_a_viewer_reweights_the_board_shares_the_view_and_resets_it(browser, board_task):  # noqa: F811
    add_predictions(board_task, 0.85)
    for width in WIDTHS:
        with sized(browser, width):
            browser.go("/tasks/board/leaderboard/")
            assert ranked(browser) == ["big", "mid", "my predictions", "fast"]
            assert "Ranked by Dynascore with the owner's weights" in browser.find_element(By.CLASS_NAME, "lead").text
            assert "predictions only" in browser.find_element(By.CSS_SELECTOR, "tr.predictions-only").text

            for name, value in (("performance", "1"), ("throughput", "5"), ("memory", "5")):
                field = browser.find_element(By.ID, f"view-{name}")
                field.clear()
                field.send_keys(value)
            browser.find_element(By.CSS_SELECTOR, "#viewer-weights button[type=submit]").click()
            wait_for(browser, lambda b: "throughput=5" in b.current_url)
            assert ranked(browser)[0] == "fast"
            fast = browser.find_element(By.CSS_SELECTOR, "#leaderboard tbody tr:first-child")
            cells = [td.text for td in fast.find_elements(By.TAG_NAME, "td")]
            assert cells[:3] == ["1", "4", "▲ up 3"]  # 4th under the owner's weights (after the predictions row)
            lead = browser.find_element(By.CLASS_NAME, "lead").text
            assert "your weights: performance 1, throughput 5, memory 5, robustness 0, fairness 0" in lead
            share = browser.find_element(By.ID, "share-view").get_attribute("href")
            assert share.endswith("/tasks/board/leaderboard/?performance=1&throughput=5&memory=5&robustness=0&fairness=0")
            notes = browser.find_element(By.ID, "dynascore-notes").text
            assert "One point of performance is worth 162.5 MB of memory." in notes
            assert "A missing figure (— in the table) is not counted as 0 nor guessed." in notes
            assert too_wide(browser) is None
            shot(browser, "leaderboard-weights", width)

            parts = urlsplit(share)
            browser.go(f"{parts.path}?{parts.query}")
            assert ranked(browser)[0] == "fast"
            browser.find_element(By.ID, "reset-view").click()
            wait_for(browser, lambda b: "throughput" not in b.current_url)
            assert ranked(browser) == ["big", "mid", "my predictions", "fast"]

            browser.go("/tasks/board/leaderboard/?throughput=lots")
            errors = browser.find_element(By.ID, "weight-errors").text
            assert "These weights could not be used" in errors and "throughput: must be a number from 0 to 1000" in errors
            assert ranked(browser) == ["big", "mid", "my predictions", "fast"]
            if width == WIDTHS[-1]:
                shot(browser, "leaderboard-weights-refused", width)
