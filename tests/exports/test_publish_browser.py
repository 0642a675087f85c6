"""Publishing and downloading in Chromium, at 1400 and 420 px (issue 39, item 8): the owner reaches the publish
control from the task page's actions, sees what publishing would give (rows per split, validated, warnings) and
publishes; a researcher follows "Download the data" to the round's published version, its empty splits said
plainly, and a load call that names only the splits with rows. Pictures for docs/gallery/."""

from __future__ import annotations

import base64

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.exports.conftest import make_example
from tests.site.screens import SHOTS, WIDTHS, in_view, shot, sized, too_wide

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def element_shot(browser, selector: str, name: str, width: int, pad: int = 40) -> None:
    """A picture of one part of the page (the datasets section sits low on a long page), as
    var/screenshots/<name>-<width>.png."""
    top, height = browser.execute_script(
        "window.scrollTo(0, 0); const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return [r.top, r.height];", selector)
    data = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": max(top - pad, 0), "width": width, "height": min(height + 2 * pad, 2600), "scale": 1}})
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / f"{name}-{width}.png").write_bytes(base64.b64decode(data["data"]))


def wait(browser, seconds: float = 20) -> WebDriverWait:
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))  # the page may be replaced mid-read


@pytest.fixture
def small_round(open_round):
    """Nine rows, seven of them never validated, no verified fooling example in dev or test."""
    for n in range(7):
        make_example(open_round, fooled=False, input={"text": f"A plain example, number {n}."})
    make_example(open_round, consensus="verified", validated_label="positive", input={"text": "Sly praise."})
    task = open_round.task
    from exports.splits import SplitRule

    for seed in range(200):
        task.config = {**task.config, "splits": {"train": 0.8, "dev": 0.1, "test": 0.1, "seed": seed}}
        task.save()
        if all(SplitRule.of(task).bucket(e.pk) == "train" for e in open_round.examples.filter(fooled=True)):
            return open_round
    raise AssertionError("no seed puts the fooling example in train")


def test_an_owner_publishes_from_the_console_and_a_researcher_downloads(browser, small_round, personas):
    browser.login(personas.owner)
    for width in WIDTHS:
        with sized(browser, width):
            browser.go("/tasks/sentiment/")
            button = browser.find_element(By.ID, "publish-data")
            assert in_view(browser, button), "the owner's publish control is in the first screen of the task page"
            button.click()
            wait(browser).until(lambda b: b.find_elements(By.ID, "publish-round-1"))
            panel = browser.find_element(By.ID, "publish-round-1")
            text = panel.text
            assert "Dev and test would be empty" in text and "Most rows are unvalidated: 7 of 8" in text
            assert too_wide(browser) is None, too_wide(browser)
            shot(browser, "owner-publish", width)  # the console's Datasets page, from its top
    with sized(browser, WIDTHS[0]):
        browser.find_element(By.CSS_SELECTOR, "#publish-round-1 button[type=submit]").click()
        wait(browser).until(lambda b: "Published round 1 as version 1" in b.find_element(By.TAG_NAME, "body").text)
        assert "published: v1" in browser.find_element(By.ID, "dataset-round-1").text
    assert small_round.snapshots.get().counts == {"train": 8, "dev": 0, "test": 0}

    browser.delete_all_cookies()
    browser.login(personas.researcher)
    for width in WIDTHS:
        with sized(browser, width):
            browser.go("/tasks/sentiment/")
            browser.find_element(By.ID, "download-data").click()
            section = browser.find_element(By.ID, "dataset-round-1")
            wait(browser).until(lambda b: in_view(b, b.find_element(By.CSS_SELECTOR, "#downloads h2")))
            assert "published: v1" in section.text and "8 rows: train 8 · dev 0 · test 0" in section.text
            assert "1 of 8 validated" in section.text
            assert "has no dev or test rows" in section.text
            call = browser.find_element(By.CSS_SELECTOR, "#dataset-round-1 .load-call").text
            assert 'load_dataset("sentiment-round1-v1")' in call and "parquet files: train" in call
            assert not browser.find_elements(By.CSS_SELECTOR, "#downloads form")  # publishing is the owners'
            assert too_wide(browser) is None, too_wide(browser)
            element_shot(browser, "#downloads", "researcher-downloads", width)
