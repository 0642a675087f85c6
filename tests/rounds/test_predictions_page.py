"""The prediction upload in Chromium, at a phone's and a desktop's width: the page says the line format and lists the
test sets, a file with two bad lines lands on its report (the status per test set, the refused lines with their
line numbers and reasons). Pictures: var/screenshots/predictions-upload-<width>.png and
predictions-report-<width>.png (docs/gallery/ holds copies, made by scripts/update_gallery.py)."""

from __future__ import annotations

import json

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from rounds import predictions
from rounds.models import PredictionUpload
from tasks import roles
from tests.factories import TaskFactory, UserFactory
from tests.rounds.conftest import fill_task
from tests.site.screens import WIDTHS, shot, sized, too_wide

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def prediction_task(transactional_db, tmp_path):
    task = TaskFactory(slug="small", kind="sentiment")
    fill_task(task, pool=6, test=6, examples=6)
    researcher = UserFactory(username="scientist")
    roles.grant(researcher, roles.RESEARCHER)
    rows = predictions.test_rows(task)
    lines = [json.dumps({"id": r.id, "label": r.target}) for r in rows["round-1/test"]]
    lines += [json.dumps({"id": r.id, "label": r.target}) for r in rows["*/test"][:4]]
    lines += ['{"id": "item-0", "label": "positive"}', '{"id": "' + rows["*/test"][4].id + '", "label": "great"}']
    path = tmp_path / "predictions.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return task, researcher, path


def test_a_prediction_file_lands_on_its_report(browser, prediction_task):
    task, researcher, path = prediction_task
    browser.login(researcher)
    for width in WIDTHS:
        with sized(browser, width):
            browser.go("/tasks/small/predictions/upload/")
            assert browser.find_element(By.ID, "line-format").text == '{"id": "item-12", "label": "positive"}'
            sets = browser.find_element(By.ID, "predictions-sets").text
            assert "round 1 test" in sets and "base test" in sets
            assert too_wide(browser) is None
            shot(browser, "predictions-upload", width)
    browser.find_element(By.ID, "id_name").send_keys("hand-written predictions")
    browser.find_element(By.ID, "id_file").send_keys(str(path))
    browser.find_element(By.ID, "predictions-submit").click()
    WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda b: "/predictions/" in b.current_url and "Line-by-line report" in b.page_source)
    upload = PredictionUpload.objects.get(task=task)
    for width in WIDTHS:
        with sized(browser, width):
            browser.go(f"/predictions/{upload.pk}/")
            summary = browser.find_element(By.ID, "predictions-summary").text
            assert "8 of 10 lines accepted, 2 refused" in summary
            statuses = {tr.get_attribute("data-dataset"): tr.get_attribute("data-status")
                        for tr in browser.find_elements(By.CSS_SELECTOR, "#predictions-sets tbody tr")}
            assert statuses == {"round-1/test": "scored", "*/test": "incomplete"}
            assert "not ranked: 2 rows missing" in browser.find_element(By.ID, "predictions-sets").text
            report = browser.find_element(By.ID, "predictions-report").text
            assert "no public test row has the id 'item-0'" in report
            assert '"great" is not one of the task\'s labels' in report
            assert too_wide(browser) is None
            shot(browser, "predictions-report", width)
