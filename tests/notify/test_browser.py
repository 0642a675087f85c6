"""The owner's notifications console in Chromium, at 1400 and 420 px: from the console's sections to Notifications,
add a webhook pointed at a real local HTTP server (the secret shown once), send a test event and read the delivery
log; then a receiver that keeps failing switches the webhook off, and the console and the log say so. Pictures:
var/screenshots/owner-webhooks-<width>.png and owner-webhook-log-<width>.png (for docs/gallery/)."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from notify.models import Webhook
from tests.site.screens import WIDTHS, shot, sized, too_wide

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def wait(browser, seconds: float = 20) -> WebDriverWait:
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def body(browser) -> str:
    return browser.find_element(By.TAG_NAME, "body").text


def test_an_owner_adds_a_webhook_tests_it_and_sees_it_switched_off(browser, task, personas, receiver, settings):
    settings.JOB_RUNNER = ""  # the embedded default: deliveries are threads of the live server's process
    settings.NOTIFY_ALLOW_PRIVATE = True
    settings.NOTIFY_RETRY_BASE_SECONDS, settings.NOTIFY_RETRY_MAX_SECONDS = 0.1, 0.2
    settings.NOTIFY_MAX_ATTEMPTS, settings.NOTIFY_DISABLE_AFTER = 2, 1
    browser.login(personas.owner)
    browser.go("/tasks/sentiment/console/")
    browser.find_element(By.LINK_TEXT, "Notifications").click()
    wait(browser).until(lambda b: b.find_elements(By.ID, "add-webhook"))
    form = browser.find_element(By.ID, "add-webhook")
    form.find_element(By.NAME, "url").send_keys(receiver.url)
    for box in form.find_elements(By.CSS_SELECTOR, "input[name=events]"):
        if box.get_attribute("value") not in ("round_closed", "pipeline_failed") and box.is_selected():
            box.click()
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(browser).until(lambda b: b.find_elements(By.ID, "secret"))
    hook = Webhook.objects.get()
    assert browser.find_element(By.ID, "secret").text == hook.secret
    assert hook.events == ["round_closed", "pipeline_failed"]

    browser.find_element(By.CSS_SELECTOR, f"tr[data-webhook='{hook.pk}'] form[action$='/test/'] button").click()
    wait(browser).until(lambda b: b.find_elements(By.ID, "delivery-log"))
    receiver.wait_for(1)
    assert receiver.verified(hook.secret, receiver.requests[0])
    wait(browser).until(lambda b: b.refresh() or b.find_elements(By.CSS_SELECTOR, "tr.delivery[data-state='done']"))

    receiver.script = [200, 500]  # from now on the receiver fails
    browser.go("/tasks/sentiment/console/notifications/")
    browser.find_element(By.CSS_SELECTOR, f"tr[data-webhook='{hook.pk}'] form[action$='/test/'] button").click()
    wait(browser).until(lambda b: b.refresh() or b.find_elements(By.ID, "webhook-off"))
    assert "switched off: its last delivery failed: HTTP 500" in browser.find_element(By.ID, "webhook-off").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.attempt.bad")) == 2
    for width in WIDTHS:
        with sized(browser, width):
            browser.go(f"/tasks/sentiment/console/notifications/webhooks/{hook.pk}/")
            assert "HTTP 500" in body(browser) and too_wide(browser) is None, too_wide(browser)
            shot(browser, "owner-webhook-log", width)
            browser.go("/tasks/sentiment/console/notifications/")
            row = browser.find_element(By.CSS_SELECTOR, f"tr[data-webhook='{hook.pk}']")
            assert "switched off" in row.text and "Switch on again" in row.text
            assert too_wide(browser) is None, too_wide(browser)
            shot(browser, "owner-webhooks", width)
