"""The create page in real headless Chromium: write, see the verdict and heat-map, act on it."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from annotation.models import Example
from tasks import round_state
from tests.annotation.conftest import NLI_PREMISE, QA_PASSAGE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def wait(browser, seconds: float = 20) -> WebDriverWait:
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def open_create(browser, writer, task) -> None:
    browser.login(writer)
    # The login page has a top bar too: wait until the signed-in one names the writer.
    wait(browser).until(lambda b: writer.username in b.find_element(By.CLASS_NAME, "topbar").text)
    browser.go(f"/tasks/{task.slug}/create/")
    wait(browser).until(EC.presence_of_element_located((By.ID, "create-form")))
    # The page asks for its context with POST contexts/next/ (serving one counts its use; a GET changes nothing).
    if task.typed_config.context_fields:
        wait(browser).until(lambda b: b.find_element(By.ID, "context").get_attribute("data-context-id"))


def verdict_text(browser) -> str:
    wait(browser).until(lambda b: "fooled" in b.find_element(By.ID, "verdict-state").text)
    return browser.find_element(By.ID, "verdict-state").text


def test_writer_submits_a_sentiment_example_and_sees_verdict_and_heatmap(browser, writer, sentiment, deploy):
    task, round, _ = sentiment
    deploy(round)
    open_create(browser, writer, task)
    assert "service was slow" in browser.find_element(By.ID, "context").text
    browser.find_element(By.ID, "input-text").send_keys("The waiter was slow, and I loved every minute.")
    browser.find_element(By.ID, "input-text").send_keys(Keys.ALT, "1")  # keyboard: first label (positive)
    browser.find_element(By.ID, "input-text").send_keys(Keys.CONTROL, Keys.ENTER)
    text = verdict_text(browser)
    example = Example.objects.get()
    assert ("You fooled the model" in text) == example.fooled
    assert example.target == "positive" and example.scoring_state == "scored"
    assert browser.find_element(By.ID, "ensemble-label").text == example.ensemble_prediction["label"]
    assert len(browser.find_elements(By.CSS_SELECTOR, ".prob")) == 3
    assert len(browser.find_elements(By.CSS_SELECTOR, "#models tbody tr")) == 2
    words = browser.find_elements(By.CSS_SELECTOR, "#heatmap .hm-word")
    assert any("loved" in w.text for w in words)
    assert any(w.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)" for w in words)
    wait(browser).until(lambda b: b.find_element(By.ID, "my-collected").text == "1")


def test_writer_writes_an_nli_hypothesis_under_the_shown_premise(browser, writer, nli, deploy):
    task, round, context = nli
    deploy(round)
    open_create(browser, writer, task)
    assert browser.find_element(By.ID, "context-premise").text == NLI_PREMISE
    browser.find_element(By.ID, "input-hypothesis").send_keys("The stage is empty.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=contradiction]").click()
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    example = Example.objects.get()
    assert example.context_id == context.pk and example.input == {"hypothesis": "The stage is empty."}
    assert example.target == "contradiction"


SELECT_SPAN = """
const passage = document.getElementById('context-passage');
const node = passage.firstChild;
const range = document.createRange();
range.setStart(node, arguments[0]);
range.setEnd(node, arguments[1]);
const selection = window.getSelection();
selection.removeAllRanges();
selection.addRange(range);
passage.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
"""


def test_writer_answers_a_qa_question_by_highlighting_a_span(browser, writer, qa, deploy):
    task, round, _ = qa
    deploy(round)
    open_create(browser, writer, task)
    browser.find_element(By.ID, "input-question").send_keys("Where does the tower stand?")
    start = QA_PASSAGE.index("the Champ de Mars")
    browser.execute_script(SELECT_SPAN, start - 1, start + len("the Champ de Mars"))  # with a leading space
    wait(browser).until(lambda b: b.find_element(By.ID, "answer-input").get_attribute("value") == "the Champ de Mars")
    assert browser.find_element(By.ID, "answer-status").text == "Highlighted in the passage."
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    assert Example.objects.get().target == {"text": "the Champ de Mars", "start": start}


def test_writer_retracts_an_example(browser, writer, sentiment, deploy):
    task, round, _ = sentiment
    deploy(round)
    open_create(browser, writer, task)
    browser.find_element(By.ID, "input-text").send_keys("Slow service, great company.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    browser.find_element(By.ID, "retract").click()
    wait(browser).until(lambda b: "Retracted" in b.find_element(By.ID, "action-status").text)
    assert Example.objects.get().retracted is True
    wait(browser).until(lambda b: b.find_element(By.ID, "my-retracted").text == "1")
    assert browser.find_element(By.ID, "retract").get_attribute("disabled")


def fool_the_model(browser, text: str) -> None:
    """Score `text` in the sandbox first, then submit it with a label the ensemble did not predict."""
    browser.find_element(By.ID, "sandbox").click()
    browser.find_element(By.ID, "input-text").send_keys(text)
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    predicted = browser.find_element(By.ID, "ensemble-label").text
    browser.find_element(By.ID, "sandbox").click()
    other = next(label for label in ("positive", "negative", "neutral") if label != predicted)
    browser.find_element(By.CSS_SELECTOR, f"input[name=target][value='{other}']").click()
    browser.find_element(By.ID, "submit").click()
    wait(browser).until(lambda b: "You fooled the model" in b.find_element(By.ID, "verdict-state").text)


def test_writer_flags_and_explains_then_tries_again(browser, writer, sentiment, deploy):
    task, round, _ = sentiment
    deploy(round)
    open_create(browser, writer, task)
    fool_the_model(browser, "Not bad at all.")
    browser.find_element(By.ID, "explain").click()
    browser.find_element(By.ID, "writer-explanation").send_keys("Double negation.")
    browser.find_element(By.ID, "explain-save").click()
    wait(browser).until(lambda b: "saved" in b.find_element(By.ID, "action-status").text)
    browser.find_element(By.ID, "flag").click()
    browser.find_element(By.ID, "flag-reason").send_keys("Ambiguous")
    browser.find_element(By.ID, "flag-save").click()
    wait(browser).until(lambda b: "Flagged" in b.find_element(By.ID, "action-status").text)
    example = Example.objects.get()
    assert example.writer_explanation == "Double negation." and example.flag_reason == "Ambiguous"
    browser.find_element(By.ID, "try-again").click()
    assert not browser.find_element(By.ID, "verdict").is_displayed()
    assert browser.find_element(By.ID, "input-text").get_attribute("value") == ""


def test_explaining_the_models_mistake_is_offered_only_when_it_made_one(browser, writer, sentiment, deploy):
    task, round, _ = sentiment
    deploy(round)
    open_create(browser, writer, task)
    browser.find_element(By.ID, "sandbox").click()
    browser.find_element(By.ID, "input-text").send_keys("Every dish was a delight.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    predicted = browser.find_element(By.ID, "ensemble-label").text
    browser.find_element(By.ID, "sandbox").click()
    browser.find_element(By.CSS_SELECTOR, f"input[name=target][value='{predicted}']").click()
    browser.find_element(By.ID, "submit").click()  # the label the model predicts: not fooled
    wait(browser).until(lambda b: "not fooled" in b.find_element(By.ID, "verdict-state").text)
    assert not browser.find_element(By.ID, "explain").is_displayed()
    assert browser.find_element(By.ID, "flag").is_displayed()


def test_the_page_is_ready_to_type_and_counts_characters(browser, writer, sentiment, deploy):
    task, round, _ = sentiment
    task.config = {**task.config, "max_input_chars": 20}
    task.save()
    deploy(round)
    open_create(browser, writer, task)
    box = browser.find_element(By.ID, "input-text")
    assert browser.switch_to.active_element == box
    box.send_keys("Twelve chars")
    assert browser.find_element(By.ID, "count-text").text == "12 / 20"
    box.send_keys(" and then some more")
    assert browser.find_element(By.ID, "count-text").text == "31 / 20: 11 too many"
    assert box.get_attribute("value").endswith("some more")  # nothing is cut silently
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "submit").click()
    assert "the limit is 20" in browser.find_element(By.ID, "form-error").text
    assert not Example.objects.exists()


def test_a_typed_answer_found_twice_asks_which_occurrence(browser, writer, qa, deploy):
    task, round, _ = qa
    deploy(round)
    open_create(browser, writer, task)
    browser.find_element(By.ID, "input-question").send_keys("Where and when?")
    browser.find_element(By.ID, "answer-input").send_keys("in")
    wait(browser).until(lambda b: b.find_element(By.ID, "answer-occurrences").is_displayed())
    assert "appears 2 times" in browser.find_element(By.ID, "answer-occurrences").text
    browser.find_element(By.ID, "submit").click()  # not chosen yet: never silently the first
    assert "choose which occurrence" in browser.find_element(By.ID, "form-error").text
    assert not Example.objects.exists()
    browser.find_element(By.CSS_SELECTOR, "label[for=occurrence-2]").click()
    assert "Occurrence 2 of 2" in browser.find_element(By.ID, "answer-status").text
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    assert Example.objects.get().target == {"text": "in", "start": QA_PASSAGE.index("in Paris")}


def test_sandbox_shows_a_verdict_and_stores_nothing(browser, writer, sentiment, deploy):
    task, round, _ = sentiment
    deploy(round)
    open_create(browser, writer, task)
    browser.find_element(By.ID, "sandbox").click()
    browser.find_element(By.ID, "input-text").send_keys("Just trying things out.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=neutral]").click()
    browser.find_element(By.ID, "submit").click()
    verdict_text(browser)
    assert browser.find_element(By.ID, "verdict-sandbox").is_displayed()
    assert not browser.find_element(By.ID, "retract").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#heatmap .hm-word")
    assert not Example.objects.exists()


def test_page_shows_saved_scoring_and_updates_when_the_verdict_arrives(browser, writer, sentiment, deploy, settings):
    task, round, _ = sentiment  # no models deployed yet: the verdict must wait
    settings.SCORING_RETRY_BASE_SECONDS = 0
    open_create(browser, writer, task)
    browser.find_element(By.ID, "input-text").send_keys("Waiting for the model.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=neutral]").click()
    browser.find_element(By.ID, "submit").click()
    # While the request is in flight the page says "Scoring…"; the embedded default answers at once (inline jobs,
    # no wait), so the answer may already be there: either state is right, never anything else.
    assert browser.find_element(By.ID, "verdict-state").text in ("Scoring your example…", "Saved — scoring…")
    wait(browser).until(lambda b: "Saved — scoring" in b.find_element(By.ID, "verdict-state").text)
    assert browser.find_element(By.ID, "submit-label").text == "Submit"
    assert Example.objects.get().scoring_state == "pending"
    deploy(round)
    verdict_text(browser)
    assert Example.objects.get().scoring_state == "scored"
    assert browser.find_elements(By.CSS_SELECTOR, "#heatmap .hm-word")


def test_new_context_and_inspiration_on_request(browser, writer, sentiment):
    from tests.factories import ContextFactory

    task, round, first = sentiment
    second = ContextFactory(task=task, round=round, payload={"prompt": "A second prompt about a concert."})
    open_create(browser, writer, task)
    shown = browser.find_element(By.ID, "context").get_attribute("data-context-id")
    browser.find_element(By.ID, "new-context").click()
    expected = second.pk if shown == str(first.pk) else first.pk
    wait(browser).until(lambda b: b.find_element(By.ID, "context").get_attribute("data-context-id") == str(expected))
    browser.find_element(By.ID, "inspiration-button").click()
    wait(browser).until(lambda b: b.find_element(By.ID, "inspiration").is_displayed())
    assert "Hard examples" in browser.find_element(By.ID, "inspiration").text


def test_a_refused_submission_says_why_on_the_page(browser, writer, sentiment, deploy):
    task, round, _ = sentiment
    deploy(round)
    open_create(browser, writer, task)
    round_state.transition(round, "closed")  # closed (by its owner, the one way) while the writer was typing
    browser.find_element(By.ID, "input-text").send_keys("Too late for this round.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target]").click()
    browser.find_element(By.ID, "submit").click()
    wait(browser).until(lambda b: "submissions are closed" in b.find_element(By.ID, "form-error").text)
    assert not Example.objects.exists()
