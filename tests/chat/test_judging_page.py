"""Judging marked answers in real headless Chromium, at 1400 and 420 px: the validator sees the conversation up to
the marked answer (the model blinded as "Model A", the writer's category and reason), picks a verdict by key, rates
the answer, saves, and the judgement is what they chose; the page says when nothing is left, and an expert decides a
disputed answer on the experts' page. Pictures: var/screenshots/chat-judge-<width>.png (docs/gallery/ holds copies)."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from chat import judging
from chat.models import Failure, Judgement
from tasks import roles
from tests.chat.test_judging import make_task, marked, person, validators
from tests.site.screens import WIDTHS, shot, sized, too_wide

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def wait(browser, seconds: float = 15) -> WebDriverWait:
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))  # the page may be replaced mid-read


def set_rating(browser, value: int) -> None:
    """Move the slider as a drag would: the value, then the input event the page listens to."""
    browser.execute_script("const r = document.getElementById('rating'); r.value = arguments[0];"
                           "r.dispatchEvent(new Event('input', {bubbles: true}));", value)


def test_a_validator_judges_marked_answers_by_keyboard_at_both_widths(browser):
    task, round_ = make_task(slug="chatty", quorum=2)
    writer = person("writer", roles.ANNOTATOR)
    validator = person("judy", roles.VALIDATOR)
    first = marked(round_, writer, earlier=1, reason="Canberra is the capital, not Sydney.")
    second = marked(round_, writer, category="needless_refusal", reason="It refused to say.",
                    answer="I am sorry, I cannot help with geography questions.")
    browser.login(validator)

    # 1400 px: the first (oldest) failure; 1 = it fails, in another category than the writer's
    with sized(browser, WIDTHS[0]):
        browser.go("/tasks/chatty/chat/judge/")
        wait(browser).until(lambda b: b.find_element(By.ID, "item").is_displayed())
        log = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#conversation li")]
        assert log == ["Writer\nQuestion 0?", "Model A\nAnswer 0.", "Writer\nWhat is the capital of Australia?",
                       "Model A · marked as failing\nSydney."]
        assert "helpful" not in browser.find_element(By.ID, "item").text  # blinded
        assert browser.find_element(By.ID, "marked-category").text.startswith("Wrong: a false claim")
        assert browser.find_element(By.ID, "marked-reason").text == "Canberra is the capital, not Sydney."
        assert browser.find_element(By.ID, "item-judged").text == "0 of 2 judgements"
        assert not browser.find_element(By.ID, "category-row").is_displayed()
        ActionChains(browser).send_keys("1").perform()
        assert browser.find_element(By.ID, "verdict-confirmed").is_selected()
        assert browser.find_element(By.ID, "category-row").is_displayed()
        category = Select(browser.find_element(By.ID, "category"))
        assert category.first_selected_option.get_attribute("value") == "wrong"  # the writer's, to start from
        category.select_by_value("unsafe")
        set_rating(browser, 12)
        assert browser.find_element(By.ID, "rating-value").text == "12"
        browser.find_element(By.ID, "reason").send_keys("Sends people to the wrong city.")
        assert too_wide(browser) is None
        shot(browser, "chat-judge", WIDTHS[0])
        browser.find_element(By.ID, "save").click()
        wait(browser).until(lambda b: b.find_element(By.ID, "done-count").text == "1")
        wait(browser).until(lambda b: "I am sorry" in b.find_element(By.ID, "conversation").text)

    saved = Judgement.objects.get(failure=first)
    assert (saved.judge, saved.verdict, saved.category, saved.rating, saved.reason) == (
        validator, "confirmed", "unsafe", 12, "Sends people to the wrong city.")

    # 420 px: the second; 3 = unusable needs a reason (said on the page), then 2 = it does not fail
    with sized(browser, WIDTHS[1]):
        browser.go("/tasks/chatty/chat/judge/")
        wait(browser).until(lambda b: b.find_element(By.ID, "item").is_displayed())
        assert "I am sorry, I cannot help with geography questions." in browser.find_element(By.ID, "marked-answer").text
        ActionChains(browser).send_keys("3").perform()
        browser.find_element(By.ID, "save").click()
        assert browser.find_element(By.ID, "judge-error").text == "Say why the answer cannot be judged."
        assert browser.switch_to.active_element.get_attribute("id") == "reason"  # the box to fill is focused
        browser.find_element(By.ID, "item-heading").click()  # out of the box: keys pick verdicts again
        ActionChains(browser).send_keys("2").perform()
        assert browser.find_element(By.ID, "verdict-not_a_failure").is_selected()
        assert not browser.find_element(By.ID, "category-row").is_displayed()
        set_rating(browser, 85)
        assert too_wide(browser) is None
        shot(browser, "chat-judge", WIDTHS[1])
        browser.find_element(By.ID, "save").click()
        status = wait(browser).until(lambda b: b.find_element(By.ID, "status").is_displayed()
                                     and b.find_element(By.ID, "status"))
        assert status.text == judging.REASONS[judging.ALL_JUDGED]
        assert browser.find_element(By.ID, "done-count").text == "1"

    saved = Judgement.objects.get(failure=second)
    assert (saved.verdict, saved.category, saved.rating, saved.reason) == ("not_a_failure", "", 85, "")


def test_an_expert_decides_a_disputed_answer_on_the_experts_page(browser):
    task, round_ = make_task(slug="chatty", quorum=2)
    failure = marked(round_, person("writer", roles.ANNOTATOR))
    a, b = validators(2)
    judging.judge(a, failure, "confirmed", "wrong", 10)
    judging.judge(b, failure, "not_a_failure", None, 70)
    expert = person("ex", roles.EXPERT)
    browser.login(expert)
    with sized(browser, WIDTHS[1]):
        browser.go("/tasks/chatty/chat/disputed/")
        card = browser.find_element(By.ID, f"failure-{failure.pk}")
        assert "v0: it fails (wrong) · rated 10" in card.text and "v1: it does not fail · rated 70" in card.text
        card.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait(browser).until(lambda b: "is required here" in card.find_element(By.CSS_SELECTOR, ".error").text)
        card.find_element(By.NAME, "reason").send_keys("The capital is Canberra.")
        card.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        decided = wait(browser).until(lambda b: card.find_elements(By.CSS_SELECTOR, ".decided"))
        assert decided[0].text == "Decided: confirmed failure (wrong)."
        assert too_wide(browser) is None
    failure.refresh_from_db()
    assert (failure.consensus, failure.decided_category, failure.decided_by_expert) == ("confirmed", "wrong", True)
    assert Failure.objects.get(pk=failure.pk).judgements.get(expert=True).judge == expert
