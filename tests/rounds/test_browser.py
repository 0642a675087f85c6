"""In a real browser: an owner closes round 1; the pipeline runs in the background with progress shown;
round 2 opens with the new ensemble and hardness seeds; leaderboard and dashboard show both rounds."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from modelzoo.models import Ensemble
from tasks.models import LabeledItem, Round
from tests.factories import TaskFactory, UserFactory
from tests.rounds.conftest import fill_task

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def owner_task(transactional_db, settings):
    from modelzoo.testing import deploy_tiny_ensemble

    settings.JOB_RUNNER = "thread"  # the web request returns at once; the page follows the job
    task = TaskFactory(slug="small", kind="sentiment")
    owner = UserFactory(username="boss")
    task.owners.add(owner)
    round1 = fill_task(task)
    deploy_tiny_ensemble(round1, members=1)  # round 1's model in the loop
    return task, owner


def text(browser, selector: str) -> str:
    """The element's text, read again when the page's poller replaced the node between finding and reading it
    (Chromium reports that as a stale element or as "Node ... does not belong to the document")."""
    for attempt in range(5):
        try:
            return browser.find_element(By.CSS_SELECTOR, selector).text
        except (StaleElementReferenceException, WebDriverException) as exc:
            if attempt == 4 or not isinstance(exc, StaleElementReferenceException) and \
                    "does not belong to the document" not in str(exc):
                raise
    raise AssertionError("unreachable")


def test_owner_closes_round_one_and_the_pipeline_opens_round_two(browser, owner_task):
    task, owner = owner_task
    browser.login(owner)
    browser.go("/tasks/small/console/rounds/")
    browser.find_element(By.ID, "start-round-open").click()  # the confirmation says what closing will do
    assert "Closing round 1 will:" in browser.find_element(By.ID, "close-round").text
    browser.find_element(By.ID, "start-round").click()
    WebDriverWait(browser, 10).until(lambda b: "/console/jobs/" in b.current_url)
    seen = set()

    def finished(b) -> bool:
        seen.add(text(b, "#job-status"))
        return text(b, "#job-status") in ("done", "failed", "awaiting")

    WebDriverWait(browser, 180, poll_frequency=0.2).until(finished)
    if text(browser, "#job-status") == "awaiting":  # the retrained ensemble came out worse than round 1's
        assert browser.find_element(By.ID, "comparison-table").is_displayed()
        browser.find_element(By.ID, "job-approve").click()  # the owner deploys it anyway
        WebDriverWait(browser, 180, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda b: text(b, "#job-status") in ("done", "failed"))
    assert text(browser, "#job-status") == "done", text(browser, "#job-error")
    assert seen & {"pending", "running"}, "the page followed the job while it ran"
    steps = browser.find_elements(By.CSS_SELECTOR, "#job-steps li.step")
    assert [s.get_attribute("class") for s in steps] == ["step done"] * 8
    assert browser.find_element(By.ID, "job-progress").get_attribute("aria-valuenow") == "100"
    assert "round 2 is open" in text(browser, "#job-done").lower()

    round2 = task.rounds.get(number=2)
    assert round2.status == Round.Status.OPEN and task.rounds.get(number=1).status == Round.Status.CLOSED
    members = Ensemble.objects.get(round=round2, active=True).ordered_members()
    assert [m.name for m in members] == ["small-r2-s0", "small-r2-s1"]
    assert LabeledItem.objects.filter(task=task, seed_round=round2).count() == 4

    browser.go("/tasks/small/leaderboard/")
    rounds_cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr td.in-rounds")]
    assert "1" in rounds_cells and "2" in rounds_cells  # models of both rounds' ensembles are listed
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#leaderboard thead th .set-label")]
    assert "round 1 test" in headers and "base test" in headers

    browser.go("/tasks/small/dashboard/")
    shown = [tr.get_attribute("data-round") for tr in browser.find_elements(By.CSS_SELECTOR, "#dashboard-rounds tbody tr")]
    assert shown == ["1", "2"]
    ensembles = [tr.get_attribute("data-round") for tr in browser.find_elements(By.CSS_SELECTOR, "#ensemble-matrix tbody tr")]
    assert ensembles == ["1", "2"]
    assert len(browser.find_elements(By.CSS_SELECTOR, ".charts svg.chart:not(.data-map)")) == 6  # 4 + seeding's 2
    assert len(browser.find_elements(By.CSS_SELECTOR, ".charts svg.chart.data-map")) == 1  # round 2's retraining
    assert browser.find_element(By.ID, "chart-seed-scores").find_element(By.CSS_SELECTOR, "svg.chart")


def test_owner_sees_a_worse_ensemble_wait_and_discards_it(browser, transactional_db, settings, small_sets_decide):
    """The job page follows the run to "awaiting approval", shows the before/after table as it arrives, and the
    owner's discard opens round 2 with the live ensemble."""
    from modelzoo.services import active_ensemble
    from tests.rounds.test_approval import deploy_live

    settings.JOB_RUNNER = "thread"
    task = TaskFactory(slug="small", kind="sentiment")
    owner = UserFactory(username="boss")
    task.owners.add(owner)
    fill_task(task)
    for example in task.rounds.get(number=1).examples.exclude(split="test"):  # as test_approval's `live`
        example.validated_label = "negative" if example.target == "positive" else "positive"
        example.save(update_fields=["validated_label"])
    live = deploy_live(task)
    browser.login(owner)
    browser.go("/tasks/small/console/rounds/")
    browser.find_element(By.ID, "start-round-open").click()
    browser.find_element(By.ID, "start-round").click()
    WebDriverWait(browser, 10).until(lambda b: "/console/jobs/" in b.current_url)
    WebDriverWait(browser, 180, poll_frequency=0.2).until(lambda b: text(b, "#job-status") in ("awaiting", "done",
                                                                                                 "failed"))
    assert text(browser, "#job-status") == "awaiting", text(browser, "#job-error")
    table = browser.find_element(By.ID, "comparison-table").text
    assert "base test" in table and "round 1 test" in table
    assert "base test" in text(browser, "#job-worse")
    browser.find_element(By.ID, "job-discard").click()
    WebDriverWait(browser, 180, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda b: text(b, "#job-status") in ("done", "failed"))
    assert text(browser, "#job-status") == "done"
    assert active_ensemble(task.rounds.get(number=2)).ordered_members() == live
