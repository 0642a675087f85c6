"""The writing assistant on the create page, in real headless Chromium with the real packaged language model:
ask, see the suggestions each with the models' verdict, take one, edit it, submit; the example records it.
A provider that is down says so on the page and the writer submits as usual."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from selenium.webdriver.common.by import By

from annotation.models import Assistance, Example, Suggestion
from tests.annotation.conftest import make_task
from tests.annotation.test_create_page import open_create, verdict_text, wait
from tests.llm.endpoints import down_endpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def assisted(provider: dict, **settings):
    return make_task("sentiment", slug="assisted",
                     config={"assistant": {"enabled": True, "provider": provider, **settings}})


def shot(browser, name: str) -> Path:
    """A picture of the page for people (var/screenshots/; docs/gallery/ keeps a copy)."""
    folder = Path(settings.VAR_DIR) / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    browser.save_screenshot(str(path))
    return path


@pytest.mark.slow
def test_writer_takes_a_scored_suggestion_edits_it_and_submits(browser, writer, deploy):
    # a fixed seed: the same suggestions on every run (unseeded, a small model now and then writes nothing usable)
    task, round_, _ = assisted({"provider": "local"}, seed=1)
    deploy(round_)
    open_create(browser, writer, task)
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "suggest").click()
    # done when the suggestions show, or the status says why there are none
    wait(browser, 120).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#suggestions .suggestion")
                             or b.find_element(By.ID, "suggest").is_enabled())
    items = browser.find_elements(By.CSS_SELECTOR, "#suggestions .suggestion")
    assert items, browser.find_element(By.ID, "suggest-status").text
    # each says what the models predicted against the label asked for; none claims a fool nobody checked
    stored = {c["text"]: c for c in Suggestion.objects.get().candidates}
    for item in items:
        line = item.find_element(By.CSS_SELECTOR, ".suggestion-verdict")
        candidate = stored[item.find_element(By.CSS_SELECTOR, ".suggestion-words").text]
        said = candidate["ensemble_prediction"]["label"]
        assert line.text.startswith(f"Asked for positive · the models say {said} (")
        if said != "positive":
            assert line.text.endswith("it fools them only if a reader agrees it is positive.")
            assert "warn" in line.find_element(By.CSS_SELECTOR, ".tag").get_attribute("class")
        else:
            assert line.text.endswith("they get it right if it is positive.")
    assert not browser.find_elements(By.CSS_SELECTOR, "#suggestions .tag.good")
    status = browser.find_element(By.ID, "suggest-status").text
    assert "asked for positive" in status and "check each" in status
    # the picture shows the text box, the label, the assistant and its scored suggestions together
    browser.execute_script("document.getElementById('input-text').scrollIntoView({block: 'start'})")
    shot(browser, "annotator-assistant-1400")  # docs/gallery/ keeps a copy (scripts/update_gallery.py)

    items[0].find_element(By.CSS_SELECTOR, "button[data-suggestion]").click()
    box = browser.find_element(By.ID, "input-text")
    suggested = box.get_attribute("value")
    assert suggested and "chosen" in items[0].get_attribute("class")
    box.send_keys(" Never again.")
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    example = Example.objects.get()
    assert example.assistance == Assistance.EDITED and example.suggested_text == suggested
    assert example.edit_distance == len(" Never again.")
    assert example.suggestion.model.startswith("SmolLM2")


def test_a_provider_that_is_down_says_so_and_the_writer_submits_as_usual(browser, writer, deploy, settings):
    task, round_, _ = assisted(down_endpoint(settings, model="smollm2", timeout_s=2))
    deploy(round_)
    open_create(browser, writer, task)
    browser.find_element(By.ID, "suggest").click()
    assert "Choose the label" in browser.find_element(By.ID, "suggest-status").text
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "suggest").click()
    wait(browser, 60).until(lambda b: "unavailable" in b.find_element(By.ID, "suggest-status").text)
    assert browser.find_element(By.ID, "suggestions").get_attribute("hidden") is not None
    browser.find_element(By.ID, "input-text").send_keys("An evening I will remember fondly.")
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    assert Example.objects.get().assistance == Assistance.OWN
