"""The model upload page in Chromium: a large upload shows its progress, then the next page."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from rounds.models import ResearcherModel
from tasks import roles
from tests.factories import TaskFactory, UserFactory
from tests.rounds.conftest import fill_task

pytestmark = [pytest.mark.browser, pytest.mark.integration]

FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


@pytest.fixture
def upload_task(transactional_db, tmp_path):
    from modelzoo.testing import build_tiny_artifact

    task = TaskFactory(slug="small", kind="sentiment")
    fill_task(task, pool=6, test=6, examples=6)
    researcher = UserFactory(username="scientist")
    roles.grant(researcher, roles.RESEARCHER)
    return task, researcher, build_tiny_artifact(task, tmp_path / "model")


def test_an_upload_shows_its_progress_and_lands_on_the_leaderboard(browser, upload_task):
    task, researcher, folder = upload_task
    browser.login(researcher)
    browser.go("/tasks/small/models/upload/")
    browser.execute_script("""  // keep what the progress label said, for the test to read after the page changes
      const label = document.getElementById('upload-progress-label');
      new MutationObserver(() => sessionStorage.setItem('progress', label.textContent))
        .observe(label, {childList: true, characterData: true, subtree: true});""")
    browser.find_element(By.ID, "id_name").send_keys("my tiny model")
    browser.find_element(By.ID, "files").send_keys("\n".join(str(folder / name) for name in FILES))
    browser.find_element(By.ID, "upload-submit").click()
    WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda b: "/leaderboard/" in b.current_url and "was accepted" in b.page_source)
    assert browser.execute_script("return sessionStorage.getItem('progress')").startswith(("Uploading", "Uploaded"))
    assert ResearcherModel.objects.get(task=task).name == "my tiny model"
