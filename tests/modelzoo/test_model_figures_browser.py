"""In real Chromium, at 1400 and 420 px (issue 39, items 2 and 6): while the models train, the home page's task card
and the create page say so and that submissions are saved and scored when the models are ready (and they are); a
verdict's language-model-opponent row gives its held-out figure and says it never changes the verdict. Pictures:
var/screenshots/<name>-<width>.png (docs/gallery/ holds copies)."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from annotation.models import Example
from modelzoo import opponent
from modelzoo.models import ModelVersion
from modelzoo.signals import ensemble_deployed
from modelzoo.testing import deploy_tiny_ensemble
from tasks import roles
from tests.annotation.conftest import make_task
from tests.factories import UserFactory
from tests.modelzoo.test_opponent_held_out import with_record
from tests.site.screens import WIDTHS, shot, sized, too_wide

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _inline(settings):
    settings.JOB_RUNNER = "inline"


def wait(browser, seconds: float = 30) -> WebDriverWait:
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def writer():
    user = UserFactory(username="writer")
    roles.grant(user, roles.ANNOTATOR)
    return user


def open_create(browser, task) -> None:
    browser.go(f"/tasks/{task.slug}/create/")
    wait(browser).until(lambda b: b.find_element(By.ID, "context").get_attribute("data-context-id"))


def submit(browser, text: str) -> None:
    box = browser.find_element(By.ID, "input-text")
    box.clear()
    box.send_keys(text)
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "submit").click()


def test_while_the_models_train_the_home_card_and_the_create_page_say_so_and_the_example_is_scored_later(browser):
    task, round_, _ = make_task("sentiment", slug="sentiment", config={"labels": ["negative", "positive"]})
    for i, (progress, message) in enumerate([(1.0, "member 1/3: trained, 120 steps, loss 0.402; waiting for member 2/3"),
                                             (0.35, "member 2/3: training, step 40/120, loss 0.581"),
                                             (0.05, "member 3/3: waiting (the members train one after another)")]):
        ModelVersion.objects.create(task=task, version=i + 1, name=f"sentiment-r1-s{i}", head="classification",
                                    status="training", progress=progress, progress_message=message)
    browser.login(writer())
    for width in WIDTHS:
        with sized(browser, width):
            browser.go("/")
            card = browser.find_element(By.CSS_SELECTOR, "li.task-card[data-task=sentiment] .training-notice")
            assert "models training: 47 %" in card.text
            assert "Submissions are saved now and scored when the models are ready." in card.text
            assert too_wide(browser) is None
            shot(browser, "home-training-notice", width)
            open_create(browser, task)
            notice = browser.find_element(By.ID, "training-notice")
            assert "The models are still training (47 %)." in notice.text
            assert "each example is saved at once" in notice.text and "scored as soon as the models are" in notice.text
            assert too_wide(browser) is None
            shot(browser, "annotator-training-notice", width)

    submit(browser, "What a lovely, quiet evening by the sea.")
    wait(browser).until(lambda b: "Saved — scoring" in b.find_element(By.ID, "verdict-state").text)
    assert Example.objects.get().scoring_state == "pending"
    ensemble = deploy_tiny_ensemble(round_)
    ensemble_deployed.send(sender=None, round=round_, versions=ensemble.ordered_members())  # scores what waited
    wait(browser, 60).until(lambda b: "fooled" in b.find_element(By.ID, "verdict-state").text)
    assert Example.objects.get().scoring_state == "scored"
    browser.go(f"/tasks/{task.slug}/create/")
    assert not browser.find_elements(By.ID, "training-notice")  # ready: the notice is gone
    browser.go("/healthz")  # no page left polling while the database is emptied


@pytest.mark.slow
def test_the_opponent_row_of_a_verdict_gives_its_held_out_figure_and_says_it_never_changes_the_verdict(browser):
    config = {"labels": ["negative", "positive"],
              "opponent": {"enabled": True, "provider": {"provider": "local"}, "timeout_s": 60}}
    task, round_, _ = make_task("sentiment", slug="opposed", config=config)
    deploy_tiny_ensemble(round_)
    rival = opponent._create(task, "SmolLM2-135M-Instruct opponent (LLM)", {"kind": opponent.KIND, "llm": {
        "provider": {"provider": "local"}, "labels": ["negative", "positive"], "label_words": {}, "offsets": {},
        "instructions": "Say whether the text is positive or negative.", "field_names": ["Text", "Second text"],
        "fitted_on": {"dataset": "*/train", "size": 240, "accuracy_before": 0.5, "accuracy_after": 0.6}}})
    with_record(rival, verdict=opponent.BEATS, accuracy=0.64, low=0.57, high=0.70, majority=0.51)
    browser.login(writer())
    for n, width in enumerate(WIDTHS):
        with sized(browser, width):
            open_create(browser, task)
            submit(browser, f"The soup was cold and the waiter was rude ({n}).")
            wait(browser, 90).until(lambda b: "fooled" in b.find_element(By.ID, "verdict-state").text)
            row = browser.find_element(By.CSS_SELECTOR, "#models tr.opponent")
            assert ("Held-out accuracy 64 % (95 % interval 57 %–70 %) on 202 rows of the base held-out slice; always "
                    "answering “positive” scores 51 %.") in row.text
            assert "It never changes the verdict: the ensemble's decides; this row is shown for comparison." in row.text
            answer = row.find_element(By.CLASS_NAME, "opponent-answer").text
            assert "it was fooled too" in answer or "it was not fooled" in answer or "left out" in answer
            browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
            assert too_wide(browser) is None
            shot(browser, "annotator-opponent-row", width)
    assert Example.objects.count() == 2
    browser.go("/healthz")  # no page left polling while the database is emptied
