"""The guidelines gate on the write page (issue 39, item 4): a writer meets unread guidelines before writing and
confirms them on the page, through the API; a refusal says "read" on a first visit and "changed" only after an
earlier version, its address is a link; and confirming never loses the typed text, the chosen label nor the
context (no reload)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from annotation.models import Example
from tasks import guidelines
from tests.annotation.conftest import sentiment_body
from tests.factories import ContextFactory
from tests.site.screens import WIDTHS, shot, sized, too_wide


def ack_url(task) -> str:
    return f"/api/tasks/{task.slug}/guidelines/acknowledge/"


@pytest.mark.django_db
def test_a_first_visit_is_asked_to_read_the_guidelines_not_told_they_changed(writer_api, writer, sentiment):
    task, _, context = sentiment
    guidelines.publish(task, "# Write well")
    refused = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json").json()
    assert refused["code"] == "guidelines" and "changed" not in refused["detail"]
    assert refused["detail"].startswith("Read this task's guidelines (version 1)")
    assert refused["first_visit"] is True and refused["guidelines_url"] == f"/tasks/{task.slug}/guidelines/"
    assert refused["acknowledge_url"] == ack_url(task)

    guidelines.acknowledge(writer, task, 1)
    guidelines.publish(task, "# Write well, and label truthfully")
    again = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json").json()
    assert again["detail"].startswith("This task's guidelines changed (now version 2)") and again["first_visit"] is False


@pytest.mark.django_db
def test_the_api_confirms_the_current_version_and_refuses_others_with_a_reason(writer_api, writer, sentiment):
    task, _, context = sentiment
    guidelines.publish(task, "# One")
    guidelines.publish(task, "# Two")
    stale = writer_api.post(ack_url(task), {"version": 1}, format="json")
    assert stale.status_code == 409 and "not the current guidelines (version 2)" in stale.json()["detail"]
    assert writer_api.post(ack_url(task), {"version": "two"}, format="json").status_code == 400
    odd = writer_api.post(ack_url(task), {"version": 2, "x" * 5000: 1}, format="json")
    assert odd.status_code == 400 and len(odd.content) < 1000  # an unknown field's name is not echoed whole
    assert guidelines.pending(writer, task) is not None
    assert writer_api.post(ack_url(task), {"version": 2}, format="json").json() == {"version": 2}
    assert guidelines.pending(writer, task) is None
    created = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert created.status_code in (201, 202)
    assert APIClient().post(ack_url(task), {"version": 2}, format="json").status_code in (401, 403)


# --- in Chromium, at 1400 and 420 px --------------------------------------------------------------------------

def wait(browser, seconds: float = 20) -> WebDriverWait:
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def context_id(browser) -> str:
    return browser.find_element(By.ID, "context").get_attribute("data-context-id")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
def test_a_writer_confirms_the_guidelines_in_place_and_keeps_text_label_and_context(
        browser, writer, sentiment, deploy, width):
    task, round, _ = sentiment
    deploy(round)
    for n in range(4):  # more contexts than one, so a reload would likely serve another
        ContextFactory(task=task, round=round, payload={"prompt": f"Another prompt to write about, number {n}."})
    guidelines.publish(task, "# Writing sentiment examples\n\nThe label is the writer's overall attitude.")
    browser.login(writer)
    with sized(browser, width):
        browser.go(f"/tasks/{task.slug}/create/")
        wait(browser).until(lambda b: context_id(b))
        # The writer meets the guidelines first: the form waits for them, and says so.
        assert not browser.find_element(By.ID, "input-text").is_enabled()
        assert browser.find_element(By.ID, "guidelines-gate").is_displayed()
        assert too_wide(browser) is None
        shot(browser, "annotator-guidelines-first", width)
        browser.execute_script("window.notReloaded = true;")
        shown = context_id(browser)
        browser.find_element(By.ID, "guidelines-ack").click()
        wait(browser).until(lambda b: b.find_element(By.ID, "input-text").is_enabled())
        assert browser.switch_to.active_element == browser.find_element(By.ID, "input-text")
        assert "you have read version 1" in browser.find_element(By.ID, "guidelines-done").text
        assert browser.execute_script("return window.notReloaded === true;") and context_id(browser) == shown
        assert guidelines.pending(writer, task) is None

        # A new version published while the writer writes: the submission is refused, and nothing is lost.
        text = f"The staff smiled at {width} people and ignored every one of them."
        browser.find_element(By.ID, "input-text").send_keys(text)
        browser.find_element(By.CSS_SELECTOR, "input[name=target][value=negative]").click()
        guidelines.publish(task, "# Writing sentiment examples\n\nSarcasm counts as what it means.")
        browser.find_element(By.ID, "submit").click()
        wait(browser).until(lambda b: b.find_elements(By.ID, "guidelines-confirm"))
        error = browser.find_element(By.ID, "form-error")
        assert "changed (now version 2)" in error.text and "/tasks/" not in error.text  # the address is a link
        link = browser.find_element(By.ID, "guidelines-link")
        assert link.get_attribute("href").endswith(f"/tasks/{task.slug}/guidelines/")
        assert too_wide(browser) is None
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", error)
        shot(browser, "annotator-guidelines-changed", width)
        browser.find_element(By.ID, "guidelines-confirm").click()
        wait(browser).until(lambda b: "as you left them" in b.find_element(By.ID, "form-error").text)
        assert browser.find_element(By.ID, "input-text").get_attribute("value") == text
        assert browser.find_element(By.CSS_SELECTOR, "input[name=target][value=negative]").is_selected()
        assert context_id(browser) == shown and browser.execute_script("return window.notReloaded === true;")
        browser.find_element(By.ID, "submit").click()
        wait(browser).until(lambda b: "fooled" in b.find_element(By.ID, "verdict-state").text)
    example = Example.objects.get()
    assert example.input == {"text": text} and example.target == "negative" and str(example.context_id) == shown
