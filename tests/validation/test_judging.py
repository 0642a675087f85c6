"""How validators judge (issue 39, item 7): the validate, expert and validator-quiz pages say how to judge (the
task's own guidance, which an owner edits in the settings form, or a default worded for the task's kind), beside
the writers' instructions; and pressing 2 (Incorrect) brings the label choices into view with the focus on the
first, on a desktop and on a phone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import Client
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from tasks import guidelines
from tasks.kinds import get_kind
from tests.factories import ExampleFactory, RoundFactory, TaskFactory
from tests.site.screens import WIDTHS, in_view, shot, sized, too_wide
from tests.tasks.test_settings_form import form_data

DEMO = Path(__file__).resolve().parents[2] / "tasks" / "demo"


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_validators_are_told_how_to_judge_in_words_for_the_tasks_kind(make_validator):
    validator = make_validator("judge")
    sentiment = TaskFactory(slug="senti", kind="sentiment")
    qa = TaskFactory(slug="spans", kind="qa")
    nli = TaskFactory(slug="pairs", kind="nli")
    page = logged_in(validator).get(f"/tasks/{sentiment.slug}/validate/").content.decode()
    assert 'id="validator-guidance"' in page and "Judge the label, not the model" in page
    assert "<strong>positive</strong>, <strong>negative</strong> or <strong>neutral</strong>" in page
    assert "judge the text on its own" in page  # the prompt is not what the label is about
    assert 'id="writers-instructions"' in page and "What the writers were asked" in page
    assert "Read the premise first" in logged_in(validator).get(f"/tasks/{nli.slug}/validate/").content.decode()
    spans = logged_in(validator).get(f"/tasks/{qa.slug}/validate/").content.decode()
    assert "Judge the answer, not the model" in spans and "type that span exactly as the passage writes it" in spans


@pytest.mark.django_db
def test_an_owner_writes_the_guidance_and_validators_and_experts_see_it(task, personas):
    owner = logged_in(personas.owner)
    settings_page = owner.get(f"/tasks/{task.slug}/console/settings/").content.decode()
    assert re.search(r'<textarea[^>]*name="validation__guidance"', settings_page)  # room for a few paragraphs
    text = "**Sarcasm** counts as what it means: *Oh great, late again* is negative."
    assert owner.post(f"/tasks/{task.slug}/console/settings/", form_data(task, validation__guidance=text)).status_code == 302
    task.refresh_from_db()
    assert task.typed_config.validation.guidance == text
    shown = logged_in(personas.validator).get(f"/tasks/{task.slug}/validate/").content.decode()
    assert "<strong>Sarcasm</strong> counts as what it means" in shown and "Judge the label, not the model" not in shown
    assert "<strong>Sarcasm</strong>" in logged_in(personas.expert).get(f"/tasks/{task.slug}/expert/").content.decode()


@pytest.mark.parametrize("name", ["sentiment", "nli", "hate_speech", "qa"])
def test_each_demo_task_has_guidance_of_its_own(name):
    data = json.loads((DEMO / f"{name}.json").read_text())
    config = get_kind(data["kind"]).parse_config(data["config"])
    own = config.validation.guidance
    assert len(own) > 400 and "**Correct** (1)" in own and "**Incorrect** (2)" in own and "**Flag** (3)" in own
    for label in getattr(config, "labels", []):
        assert label in own


# --- in Chromium, at 1400 and 420 px --------------------------------------------------------------------------

@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
def test_pressing_2_brings_the_label_choices_into_view_with_the_focus_on_the_first(browser, make_validator, width):
    demo = json.loads((DEMO / "sentiment.json").read_text())
    task = TaskFactory(slug="sentiment-demo", name="Sentiment (demo)", kind="sentiment", config=demo["config"])
    guidelines.publish(task, demo["guidelines"])
    rnd = RoundFactory(task=task)
    ExampleFactory(round=rnd, input={"text": "What a thrilling evening of watching the kettle boil."}, target="positive")
    validator = make_validator(f"judge-{width}")
    guidelines.acknowledge(validator, task, 1)
    browser.login(validator)
    try:
        with sized(browser, width):
            browser.go(f"/tasks/{task.slug}/validate/")
            WebDriverWait(browser, 20).until(EC.visibility_of_element_located((By.ID, "item")))
            assert browser.find_element(By.ID, "validator-guidance").is_displayed()
            assert "Sarcasm counts as what it means" in browser.find_element(By.ID, "guidance-text").text
            # as a validator who has read the example: the buttons at the bottom of the window
            browser.execute_script("const r = document.querySelector('.vote-buttons').getBoundingClientRect();"
                                   "window.scrollBy(0, r.bottom - window.innerHeight + 8);")
            ActionChains(browser).send_keys("2").perform()
            panel = browser.find_element(By.ID, "label-panel")
            WebDriverWait(browser, 10).until(lambda b: panel.is_displayed())
            first = browser.find_element(By.CSS_SELECTOR, "#label-choices button[data-key=a]")
            assert in_view(browser, panel), f"the label choices are outside the window at {width}px"
            assert browser.switch_to.active_element == first
            assert too_wide(browser) is None
            shot(browser, "validator-judging", width)
    finally:
        browser.get("about:blank")  # no request of the page outlives the live server
