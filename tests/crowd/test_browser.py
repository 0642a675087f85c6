"""In real headless Chromium: a worker follows an external link, reads the guidelines, passes the quiz,
writes an example, sees it under "My examples", and gets the completion code."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from annotation.models import Example
from crowd import links
from crowd.models import Assignment
from tasks import guidelines
from tests.crowd.conftest import set_crowd, writer_quiz
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def leave_page(browser):
    """Stop the page's scripts before the live server goes away (no request may outlive the test)."""
    yield
    browser.get("about:blank")


@pytest.fixture
def tiny_models(settings, tmp_path):
    from modelzoo.serving import reset_backends

    settings.MODEL_STORE = tmp_path
    settings.MODEL_BACKEND = "inprocess"
    reset_backends()
    yield
    reset_backends()


def wait(browser, seconds: float = 20) -> WebDriverWait:
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def click(browser, by, value) -> None:
    wait(browser).until(EC.element_to_be_clickable((by, value))).click()


def test_a_worker_goes_from_the_external_link_to_the_completion_code(browser, crowd_task, tiny_models):
    from modelzoo.testing import deploy_tiny_ensemble

    deploy_tiny_ensemble(crowd_task.rounds.get(), members=1)
    owner = UserFactory(username="study-owner")
    crowd_task.owners.add(owner)
    set_crowd(crowd_task, writers_need_quiz=True)
    guidelines.publish(crowd_task, "# How to write\n\n| sentence | label |\n|---|---|\n| *Oh great, rain.* | negative |",
                       by=owner)
    quiz = writer_quiz(crowd_task)
    batch = links.create_batch(crowd_task, owner, name="pilot", source="prolific", hours=24, examples_required=1,
                               workers="PID-4242,STUDY-1")

    browser.go(links.link_path(batch.assignments.get()))
    click(browser, By.ID, "start")
    wait(browser).until(EC.presence_of_element_located((By.ID, "steps")))
    assert "PID-4242" in browser.find_element(By.TAG_NAME, "main").text

    click(browser, By.LINK_TEXT, "Read the guidelines")
    wait(browser).until(EC.presence_of_element_located((By.ID, "guidelines-text")))
    assert "Oh great, rain." in browser.find_element(By.ID, "guidelines-text").text
    click(browser, By.ID, "guidelines-ack")
    wait(browser).until(EC.presence_of_element_located((By.ID, "step-quiz")))

    click(browser, By.LINK_TEXT, "Pass the short quiz")
    wait(browser).until(EC.presence_of_element_located((By.ID, "quiz-form")))
    for item in quiz.items.all():
        browser.find_element(By.CSS_SELECTOR, f"input[name=q{item.pk}][value='{item.answer}']").click()
    click(browser, By.ID, "quiz-submit")
    wait(browser).until(EC.presence_of_element_located((By.ID, "steps")))
    assert "Passed (3 of 3 right)" in browser.find_element(By.CLASS_NAME, "messages").text

    click(browser, By.LINK_TEXT, "Write examples")
    wait(browser).until(EC.presence_of_element_located((By.ID, "create-form")))
    browser.find_element(By.ID, "input-text").send_keys("The rain ruined nothing; we danced anyway.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    click(browser, By.ID, "submit")
    wait(browser).until(lambda b: "fooled" in b.find_element(By.ID, "verdict-state").text)
    assert browser.find_element(By.ID, "input-text").get_attribute("value") == ""  # the box is cleared

    click(browser, By.ID, "my-examples-link")
    table = wait(browser).until(EC.presence_of_element_located((By.ID, "my-examples")))
    example = Example.objects.get()
    assert "we danced anyway" in table.text
    assert browser.find_element(By.ID, f"my-example-{example.pk}").get_attribute("data-consensus") == "unvalidated"

    click(browser, By.ID, "your-assignment")
    click(browser, By.ID, "finish")
    code = wait(browser).until(EC.presence_of_element_located((By.ID, "completion-code"))).text
    assignment = Assignment.objects.get()
    assert code == assignment.completion_code and assignment.completed_at is not None
    assert example.author == assignment.user
