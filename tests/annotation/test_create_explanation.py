"""What the writer is told about the verdict's word map and the QA answer (API and the real page)."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from annotation.models import Example
from tests.annotation.conftest import QA_PASSAGE, qa_body, sentiment_body
from tests.annotation.test_create_page import open_create, verdict_text, wait

# on_commit must fire for the scoring job to run, so these tests commit for real.
pytestmark = pytest.mark.django_db(transaction=True)


def test_the_stored_explanation_covers_every_member_and_says_what_its_colours_mean(writer_api, sentiment, deploy):
    task, round, context = sentiment
    deploy(round, members=3)
    response = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert response.status_code == 201, response.data
    explanation = response.data["explanation"]
    label = response.data["ensemble_prediction"]["label"]
    assert explanation["method"] == "occlusion" and explanation["members"] == 3
    assert explanation["model_versions"] == response.data["model_versions"]
    assert explanation["target"] == label
    assert explanation["probability"] == pytest.approx(response.data["ensemble_prediction"]["probs"][label], abs=1e-5)
    assert f"“{label}”" in explanation["legend"] and "over 3 models" in explanation["legend"]
    assert "green" in explanation["legend"] and "red" in explanation["legend"]
    assert [w["word"] for w in explanation["words"]] == ["What", "a", "wonderful,", "slow", "evening."]


def test_a_task_that_chose_a_gradient_method_gets_it(writer_api, deploy):
    from tests.annotation.conftest import make_task

    task, round, context = make_task("sentiment", slug="gradients", config={"explanation_method": "input_x_gradient"})
    deploy(round)
    response = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert response.status_code == 201, response.data
    assert response.data["explanation"]["method"] == "input_x_gradient"
    assert response.data["explanation"]["members"] == 2


def test_a_qa_verdict_has_a_confidence_between_zero_and_one_and_explains_that_span(writer_api, qa, deploy):
    task, round, context = qa
    deploy(round)
    response = writer_api.post(f"/api/tasks/{task.slug}/examples/", qa_body(context), format="json")
    assert response.status_code == 201, response.data
    answer = response.data["ensemble_prediction"]
    assert QA_PASSAGE[answer["start"]:answer["end"]] == answer["text"]
    assert 0 < answer["score"] <= 1
    assert response.data["explanation"]["span"] == [answer["start"], answer["end"]]


@pytest.mark.browser
def test_the_page_names_the_method_and_colours_evidence_for_the_answer_green(browser, writer, sentiment, deploy):
    task, round, _ = sentiment
    deploy(round, members=3)
    open_create(browser, writer, task)
    browser.find_element(By.ID, "input-text").send_keys("The food was delicious and the staff were wonderful.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    example = Example.objects.get()
    legend = browser.find_element(By.ID, "heatmap-legend").text
    assert legend == example.explanation["legend"]
    assert f"“{example.ensemble_prediction['label']}”" in legend and "word occlusion over 3 models" in legend
    assert "word occlusion over 3 models" in browser.find_element(By.ID, "heatmap-method").text
    for word in browser.find_elements(By.CSS_SELECTOR, "#heatmap .hm-word"):
        score = float(word.get_attribute("data-score"))
        colour = word.value_of_css_property("background-color")
        if score > 0.05:
            assert colour.startswith("rgba(44, 160, 44"), (word.text, score, colour)  # green: evidence for
        elif score < -0.05:
            assert colour.startswith("rgba(214, 39, 40"), (word.text, score, colour)  # red: evidence against


@pytest.mark.browser
def test_the_qa_page_marks_the_models_answer_in_the_passage_with_its_confidence(browser, writer, qa, deploy):
    task, round, _ = qa
    deploy(round)
    open_create(browser, writer, task)
    browser.find_element(By.ID, "input-question").send_keys("When was the Eiffel Tower completed?")
    browser.find_element(By.ID, "answer-input").send_keys("1889")
    wait(browser).until(lambda b: b.find_element(By.ID, "answer-status").text == "Found in the passage.")
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    answer = Example.objects.get().ensemble_prediction
    mark = wait(browser).until(lambda b: b.find_element(By.ID, "model-answer"))
    assert mark.text == answer["text"].strip()
    assert browser.find_element(By.ID, "context-passage").text == QA_PASSAGE  # the passage itself is unchanged
    assert f"confidence {100 * answer['score']:.1f}%" in browser.find_element(By.ID, "ensemble-label").text


@pytest.mark.browser
def test_the_verdict_shows_at_once_and_its_word_map_when_the_map_arrives(browser, writer, sentiment, deploy,
                                                                          monkeypatch):
    task, round, _ = sentiment
    deploy(round)
    queued = []
    monkeypatch.setattr("annotation.jobs.enqueue_map", queued.append)  # the map job waits in a queue
    open_create(browser, writer, task)
    browser.find_element(By.ID, "input-text").send_keys("The food was delicious and the staff were wonderful.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)  # the verdict, without its map
    assert "Working out which words mattered" in browser.find_element(By.ID, "map-pending").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#heatmap .hm-word")

    from annotation import scoring

    scoring.explain_example(queued[0])  # a worker computes the map; the page's poll picks it up
    words = wait(browser).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#heatmap .hm-word"))
    assert any("wonderful" in w.text for w in words)
    assert "word occlusion over 2 models" in browser.find_element(By.ID, "heatmap-legend").text
