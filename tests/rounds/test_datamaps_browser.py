"""In a real browser: after a round's retraining (tiny models), the dashboard shows the data map of the new round's
models — the scatter of variability against confidence and the examples per region — and, for a round no
retraining mapped, says why there is none. Pictures: var/screenshots/data-map-*.png (docs/gallery/ holds copies)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from selenium.webdriver.common.by import By

from annotation.models import Example
from rounds import services
from rounds.models import DataMap, PipelineRun
from tests.factories import TaskFactory, UserFactory
from tests.rounds.conftest import fill_task
from zoo import dynamics

pytestmark = [pytest.mark.browser, pytest.mark.integration]
SHOTS = Path(django_settings.VAR_DIR) / "screenshots"


def shoot(browser, element, name: str) -> None:
    browser.execute_script("arguments[0].scrollIntoView()", element)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / name
    assert element.screenshot(str(shot)) and shot.stat().st_size > 1000


def test_the_dashboard_shows_the_data_map_of_a_retrained_round(browser, transactional_db, settings):
    # the tiny encoder learns this data when both its layers train, at a higher learning rate
    settings.MODELZOO_RECIPE = {"lr": 3e-3, "top_layers": 2}
    owner = UserFactory(username="cartographer")
    task = TaskFactory(slug="mapped", kind="sentiment")
    task.owners.add(owner)
    round1 = fill_task(task, pool=40, examples=60)
    # validators relabelled every seventh example wrongly: planted label errors
    for example in Example.objects.filter(round=round1).order_by("pk")[::7]:
        example.validated_label = "negative" if example.target == "positive" else "positive"
        example.save(update_fields=["validated_label"])
    run = services.start_pipeline(task, owner, {"k": 0})
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE, run.error
    first = DataMap.objects.filter(round__task=task, round__number=2).order_by("settings__member").first()

    browser.go("/tasks/mapped/dashboard/?round=2")
    section = browser.find_element(By.ID, "data-map")
    assert "Data map, round 2's models" in section.text
    assert f"over {first.checkpoints} checkpoints" in section.text
    points = section.find_elements(By.CSS_SELECTOR, "#chart-data-map svg circle[data-region]")
    assert len(points) == len(first.entries)  # one point per training example
    rows = section.find_elements(By.CSS_SELECTOR, "#data-map-counts tbody tr")
    assert [r.get_attribute("data-region") for r in rows] == list(dynamics.REGIONS)
    shown = {r.get_attribute("data-region"): int(r.find_elements(By.TAG_NAME, "td")[1].text) for r in rows}
    assert shown == first.counts and sum(shown.values()) == len(first.entries)
    assert "ambiguous: variability >" in section.find_element(By.ID, "data-map-rule").text
    shoot(browser, section, "data-map-dashboard.png")

    browser.go("/tasks/mapped/dashboard/?round=1")  # round 1's models were never retrained here: no map
    note = browser.find_element(By.ID, "no-data-map")
    assert "No data map for round 1" in note.text and "at least two complete passes" in note.text
    shoot(browser, browser.find_element(By.ID, "data-map"), "data-map-none.png")
