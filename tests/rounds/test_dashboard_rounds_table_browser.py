"""In a real browser: the dashboard of a task with two closed rounds shows the round-over-round table; its
picture is written to var/screenshots/dashboard-round-over-round.png (docs/gallery/ holds a copy)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from selenium.webdriver.common.by import By

from tests.rounds.test_dashboard_rounds_table import two_closed_rounds

pytestmark = [pytest.mark.browser, pytest.mark.integration]
SHOTS = Path(django_settings.VAR_DIR) / "screenshots"


def test_the_dashboard_shows_each_rounds_ensemble_on_every_test_set(browser, transactional_db):
    two_closed_rounds()
    browser.go("/tasks/rot/dashboard/")
    section = browser.find_element(By.ID, "round-over-round")
    assert "Does each round's model get harder to fool?" in section.text
    rows = section.find_elements(By.CSS_SELECTOR, "#round-over-round-table tbody tr")
    assert [r.get_attribute("data-round") for r in rows] == ["1", "2", "3"]
    heads = [th.text for th in section.find_elements(By.CSS_SELECTOR, "thead th")]
    assert heads == ["Ensemble of", "round 1 test", "round 2 test", "base test"]
    assert "12.5%" in rows[2].text
    browser.execute_script("arguments[0].scrollIntoView()", section)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / "dashboard-round-over-round.png"
    assert section.screenshot(str(shot)) and shot.stat().st_size > 1000
