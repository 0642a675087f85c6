"""In real Chromium, at 1400 and 420 px (issue 39, items 2 and 10): the leaderboard says what each test set is and
how large, gives each figure its 95 % interval, flags a set too small to decide anything, and the language model
opponent's row says it decides no verdict, with its held-out figure. Pictures: var/screenshots/leaderboard-test-sets-
<width>.png (docs/gallery/ holds copies)."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from modelzoo import opponent
from modelzoo.models import Evaluation
from rounds import datasets
from tests.factories import TaskFactory
from tests.modelzoo.test_opponent_held_out import with_record
from tests.rounds.test_test_sets import labelled_items, model_with
from tests.site.screens import WIDTHS, shot, sized, too_wide

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_leaderboard_names_each_test_set_its_size_and_each_figures_interval(browser):
    task = TaskFactory(slug="sentiment", kind="sentiment", config={"opponent": {"enabled": True}})
    labelled_items(task, "test", 30, "demo")
    labelled_items(task, "heldout", 202, "sst2-train-sample")
    for version, (small, large) in enumerate([(0.533, 0.856), (0.433, 0.847), (0.3, 0.861)], start=1):
        model_with(task, version, {datasets.BASE_TEST: (small, 30), datasets.BASE_HELD_OUT: (large, 202)})
    rival = opponent._create(task, "SmolLM2-135M-Instruct opponent (LLM)", {"kind": opponent.KIND, "llm": {
        "provider": {"provider": "local"}, "labels": ["negative", "positive", "neutral"], "label_words": {},
        "offsets": {}, "instructions": "", "field_names": ["Text", "Second text"],
        "fitted_on": {"dataset": "*/train", "size": 240, "accuracy_before": 0.46, "accuracy_after": 0.58}}})
    with_record(rival, verdict=opponent.FALLS_SHORT, accuracy=0.53, low=0.46, high=0.60, majority=0.51)
    Evaluation.objects.create(model_version=rival, dataset=datasets.BASE_HELD_OUT, size=202, metrics={"accuracy": 0.53})
    Evaluation.objects.create(model_version=rival, dataset=datasets.BASE_TEST, size=30, metrics={"accuracy": 0.4})

    for width in WIDTHS:
        with sized(browser, width):
            browser.go("/tasks/sentiment/leaderboard/")
            sets = browser.find_element(By.ID, "test-sets").text
            assert "base test · 30 items small set" in sets and "the task's imported test items (demo)" in sets.lower()
            assert "base held-out · 202 items" in sets and "never trained on (sst2-train-sample)" in sets
            assert "decides nothing" in sets and "never stops a retrained ensemble's deploy" in sets
            heads = {th.get_attribute("data-dataset"): th.text for th in
                     browser.find_elements(By.CSS_SELECTOR, "#leaderboard thead th[data-dataset]")}
            assert heads[datasets.BASE_TEST].split("\n") == ["base test", "30 items · small set"]
            assert heads[datasets.BASE_HELD_OUT].split("\n") == ["base held-out", "202 items"]
            rows = browser.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr")
            first = rows[0].text
            assert first.startswith("1 m3") and "30.0%\n16.7%–47.9%" in first  # ranked on the 202-row set
            opponent_row = browser.find_element(By.CSS_SELECTOR, "#leaderboard tbody tr.opponent").text
            assert "decides no verdict; left out of verdicts" in opponent_row
            notes = browser.find_element(By.ID, "opponent-notes").text
            assert "It decides no verdict: an example's verdict is the ensemble's alone" in notes
            assert "It is left out of verdicts." in notes and "it does not beat that by 5 points" in notes
            assert too_wide(browser) is None
            shot(browser, "leaderboard-test-sets", width)
