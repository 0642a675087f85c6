"""Browser tests: a validator works through three items with the keyboard alone; an expert resolves a dispute."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from annotation.models import Example
from tests.factories import ExampleFactory, RoundFactory, TaskFactory, UserFactory
from validation import services
from validation.models import Validation

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def leave_page(browser):
    """Stop the page's scripts before the live server goes away (no request may outlive the test)."""
    yield
    browser.get("about:blank")


def wait(browser, condition, timeout: int = 10):
    return WebDriverWait(browser, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def shown_id(browser) -> str:
    return browser.find_element(By.ID, "item-id").text


def keys(browser, *sequence: str) -> None:
    ActionChains(browser).send_keys(*sequence).perform()


def test_validator_works_through_three_items_with_the_keyboard(browser, make_validator):
    task = TaskFactory(slug="kbd", name="Keyboard", kind="sentiment")
    rnd = RoundFactory(task=task)
    examples = [ExampleFactory(round=rnd) for _ in range(3)]
    validator = make_validator("kbd-validator")
    browser.login(validator)
    wait(browser, EC.presence_of_element_located((By.ID, "task-list")))
    browser.go(f"/tasks/{task.slug}/validate/")
    wait(browser, EC.visibility_of_element_located((By.ID, "item")))
    assert shown_id(browser) == f"#{examples[0].pk}"
    assert browser.find_element(By.ID, "writer-label").text == "positive"
    assert "negative" in browser.find_element(By.ID, "model-verdict").text

    keys(browser, "1")  # correct
    wait(browser, lambda b: shown_id(b) == f"#{examples[1].pk}")
    keys(browser, "2")  # incorrect ...
    wait(browser, EC.visibility_of_element_located((By.ID, "label-panel")))
    keys(browser, "a")  # ... the first other label: negative
    wait(browser, lambda b: shown_id(b) == f"#{examples[2].pk}")
    keys(browser, "3")  # flag ...
    wait(browser, lambda b: b.switch_to.active_element.get_attribute("id") == "reason-input")
    keys(browser, "not a real sentence", Keys.ENTER)
    wait(browser, EC.visibility_of_element_located((By.ID, "status")))

    assert browser.find_element(By.ID, "status").get_attribute("data-reason") == "already_voted"
    assert browser.find_element(By.ID, "done-count").text == "3"
    votes = {v.example_id: (v.verdict, v.label, v.reason) for v in Validation.objects.filter(validator=validator)}
    assert votes == {
        examples[0].pk: ("correct", None, ""),
        examples[1].pk: ("incorrect", "negative", ""),
        examples[2].pk: ("flagged", None, "not a real sentence"),
    }


def test_expert_resolves_a_disputed_item(browser, make_validator):
    task = TaskFactory(slug="disputes", name="Disputes", kind="sentiment")
    expert = UserFactory(username="the-expert")
    task.owners.add(expert)
    example = ExampleFactory(round=RoundFactory(task=task), input={"text": "what a wonderfully awful film"})
    for i, (verdict, label, reason) in enumerate(
        [("correct", None, ""), ("flagged", None, "sarcasm"), ("incorrect", "negative", ""), ("incorrect", "neutral", "")]
    ):
        services.submit_vote(make_validator(f"d{i}"), example, verdict, label, reason)
    example.refresh_from_db()
    assert example.consensus == "disputed"

    browser.login(expert)
    wait(browser, EC.presence_of_element_located((By.ID, "task-list")))
    browser.go(f"/tasks/{task.slug}/expert/?show=disagreements")
    card = wait(browser, EC.presence_of_element_located((By.ID, f"review-{example.pk}")))
    assert "sarcasm" in card.text and "wonderfully awful" in card.text
    card.find_element(By.CSS_SELECTOR, "select[name=label]").send_keys("negative")
    card.find_element(By.CSS_SELECTOR, "button.resolve-incorrect").click()
    wait(browser, EC.presence_of_element_located((By.ID, "review-empty")))
    assert "now rejected" in browser.find_element(By.CLASS_NAME, "messages").text
    example = Example.objects.get(pk=example.pk)
    assert (example.consensus, example.validated_label) == ("rejected", "negative")
