"""Qualification: new sign-ups start unqualified as validators; passing a task's quiz grants the role on
that task; attempts are kept and limited; a task may ask writers for a quiz; owners appoint experts."""

from __future__ import annotations

import pytest
from django.test import Client

from crowd.models import QuizAttempt
from tasks import guidelines, roles
from tests.crowd.conftest import answers_for, set_crowd, sign_up, validator_quiz, writer_quiz
from tests.factories import ExampleFactory, UserFactory
from tests.site.screens import WIDTHS, shot, sized, too_wide

pytestmark = pytest.mark.django_db


def test_a_fresh_signup_cannot_validate_until_they_pass_the_quiz(crowd_task):
    quiz = validator_quiz(crowd_task)
    example = ExampleFactory(round=crowd_task.rounds.get())
    client = sign_up("newcomer")
    slug = crowd_task.slug
    assert client.get(f"/tasks/{slug}/validate/").status_code == 403
    assert client.post(f"/api/tasks/{slug}/validation/next/").status_code == 403
    assert client.post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"},
                       content_type="application/json").status_code == 403
    assert b"Take the validator quiz" in client.get(f"/tasks/{slug}/").content

    failed = client.post(f"/tasks/{slug}/quiz/validator/", answers_for(quiz, right=False))
    assert failed.status_code == 200 and b"0 of 4 right" in failed.content
    assert client.get(f"/tasks/{slug}/validate/").status_code == 403

    passed = client.post(f"/tasks/{slug}/quiz/validator/", answers_for(quiz, right=True))
    assert passed.status_code == 302
    assert client.get(f"/tasks/{slug}/validate/").status_code == 200
    assert client.post(f"/api/tasks/{slug}/validation/next/").json()["item"]["id"] == example.pk
    vote = client.post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"}, content_type="application/json")
    assert vote.status_code == 201
    attempts = QuizAttempt.objects.filter(user__username="newcomer").order_by("created_at")
    assert [(a.correct, a.passed) for a in attempts] == [(0, False), (4, True)]


def test_the_quiz_grants_the_role_on_that_task_only(crowd_task):
    from tests.factories import TaskFactory

    other = TaskFactory(slug="other-task")
    quiz = validator_quiz(crowd_task)
    client = sign_up("focused")
    client.post(f"/tasks/{crowd_task.slug}/quiz/validator/", answers_for(quiz))
    user = quiz.attempts.get().user
    assert roles.has_role(user, roles.VALIDATOR, crowd_task)
    assert not roles.has_role(user, roles.VALIDATOR, other)


def test_attempts_are_limited_and_answers_never_shown(crowd_task):
    quiz = validator_quiz(crowd_task)
    client = sign_up("guesser")
    for _ in range(3):
        page = client.post(f"/tasks/{crowd_task.slug}/quiz/validator/", answers_for(quiz, right=False))
        assert b"incorrect</strong>" not in page.content  # the right answers are not revealed
    refused = client.post(f"/tasks/{crowd_task.slug}/quiz/validator/", answers_for(quiz), follow=True)
    assert b"used all 3 attempts" in refused.content
    assert QuizAttempt.objects.count() == 3
    assert not roles.has_role(quiz.attempts.first().user, roles.VALIDATOR, crowd_task)


def test_an_unanswered_question_is_refused_with_a_message(crowd_task):
    quiz = validator_quiz(crowd_task)
    client = sign_up("hasty")
    partial = dict(list(answers_for(quiz).items())[:2])
    page = client.post(f"/tasks/{crowd_task.slug}/quiz/validator/", partial, follow=True)
    assert b"answer every question" in page.content
    assert QuizAttempt.objects.count() == 0


def test_the_quiz_waits_for_the_guidelines(crowd_task):
    quiz = validator_quiz(crowd_task)
    guidelines.publish(crowd_task, "# Guidelines\n\nSarcasm counts as what it means.")
    client = sign_up("reader")
    page = client.get(f"/tasks/{crowd_task.slug}/quiz/validator/")
    assert b"Read the" in page.content and b"quiz-form" not in page.content
    refused = client.post(f"/tasks/{crowd_task.slug}/quiz/validator/", answers_for(quiz), follow=True)
    assert b"Read this task&#x27;s guidelines (version 1)" in refused.content
    client.post(f"/tasks/{crowd_task.slug}/guidelines/acknowledge/", {"version": "1"})
    assert client.post(f"/tasks/{crowd_task.slug}/quiz/validator/", answers_for(quiz)).status_code == 302


def test_a_task_can_ask_writers_for_a_quiz_too(crowd_task):
    quiz = writer_quiz(crowd_task)
    writer = UserFactory(username="global-writer")
    roles.grant(writer, roles.ANNOTATOR)
    assert roles.has_role(writer, roles.ANNOTATOR, crowd_task)
    set_crowd(crowd_task, writers_need_quiz=True)
    roles.forget(writer)
    assert not roles.has_role(writer, roles.ANNOTATOR, crowd_task)
    client = Client()
    client.force_login(writer)
    assert client.get(f"/tasks/{crowd_task.slug}/create/").status_code == 403
    client.post(f"/tasks/{crowd_task.slug}/quiz/annotator/", answers_for(quiz))
    assert client.get(f"/tasks/{crowd_task.slug}/create/").status_code == 200


def test_owners_appoint_experts_from_the_crowd_console(crowd_task):
    owner = UserFactory(username="task-owner")
    crowd_task.owners.add(owner)
    helper = UserFactory(username="helper")
    client = Client()
    client.force_login(owner)
    response = client.post(f"/tasks/{crowd_task.slug}/console/crowd/members/",
                           {"username": "helper", "role": "expert", "action": "appoint"})
    assert response.status_code == 302
    assert roles.has_role(helper, roles.EXPERT, crowd_task) and roles.has_role(helper, roles.VALIDATOR, crowd_task)
    page = client.get(f"/tasks/{crowd_task.slug}/console/crowd/")
    assert b"helper" in page.content and b"Appointed by an owner" in page.content
    client.post(f"/tasks/{crowd_task.slug}/console/crowd/members/",
                {"username": "helper", "role": "expert", "action": "revoke"})
    roles.forget(helper)
    assert not roles.has_role(helper, roles.EXPERT, crowd_task)


def test_appointing_an_unknown_account_says_so(crowd_task):
    owner = UserFactory(username="task-owner")
    crowd_task.owners.add(owner)
    client = Client()
    client.force_login(owner)
    page = client.post(f"/tasks/{crowd_task.slug}/console/crowd/members/",
                       {"username": "nobody", "role": "expert", "action": "appoint"}, follow=True)
    assert b"no account is called" in page.content


def test_an_owner_writes_a_question_and_chooses_others_from_the_data(crowd_task):
    from crowd import quizzes
    from tests.factories import LabeledItemFactory

    owner = UserFactory(username="quiz-owner")
    crowd_task.owners.add(owner)
    item = LabeledItemFactory(task=crowd_task, input={"text": "Dreadful service."}, target="negative")
    decided = ExampleFactory(round=crowd_task.rounds.get(), consensus="rejected", validated_label="negative")
    client = Client()
    client.force_login(owner)
    url = f"/tasks/{crowd_task.slug}/console/crowd/quiz/validator/"
    written = client.post(url, {"form": "item", "context_prompt": "A prompt.", "input_text": "I adore rainy days.",
                                "proposed": "negative", "answer": "incorrect"})
    assert written.status_code == 302
    client.post(url + "add/", {"labelled": [item.pk], "example": [decided.pk]})
    questions = [(q.item.input["text"], q.item.proposed, q.item.answer)
                 for q in quizzes.questions(quizzes.quiz_for(crowd_task, "validator"))]
    assert questions == [("I adore rainy days.", "negative", "incorrect"), ("Dreadful service.", "negative", "correct"),
                         (decided.input["text"], "positive", "incorrect")]
    client.post(url, {"form": "settings", "pass_mark": "0.5", "max_attempts": "2", "active": "on"})
    quiz = quizzes.quiz_for(crowd_task, "validator")
    assert (quiz.pass_mark, quiz.max_attempts) == (0.5, 2)
    page = client.get(url).content.decode()
    assert "I adore rainy days." in page and "labelled item" in page
    console = client.get(f"/tasks/{crowd_task.slug}/console/crowd/").content.decode()
    assert 'data-role="validator"' in console and "active (pass mark 50.0%)" in console


def test_a_failed_quiz_says_which_questions_were_wrong_but_not_the_right_answers(crowd_task):
    """Issue 39, item 7: the worker learns which questions to read the guidelines again for, and what they answered;
    the right answer is never shown (a retake asks the same questions)."""
    quiz = validator_quiz(crowd_task)
    items = list(quiz.items.all())
    answers = answers_for(quiz, right=True)
    answers[f"q{items[1].pk}"] = "correct"  # question 2's right answer is "incorrect"
    answers[f"q{items[3].pk}"] = "correct"  # so is question 4's
    client = sign_up("learner")
    page = client.post(f"/tasks/{crowd_task.slug}/quiz/validator/", answers)
    html = page.content.decode()
    assert "2 of 4 right" in html
    marks = html[html.index('id="quiz-marks"'):html.index("</ol>", html.index('id="quiz-marks"'))]
    assert 'data-question="2" data-right="false"' in marks and 'data-question="4" data-right="false"' in marks
    assert 'data-question="1" data-right="true"' in marks and 'data-question="3" data-right="true"' in marks
    assert "Oh great, the lift is broken again." in marks and "you answered “correct”" in marks
    assert "incorrect" not in marks  # the right answer of the wrong questions is not given
    assert "How to judge" in html  # the validator quiz shows how validators judge


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
def test_the_quiz_result_marks_each_question_on_a_phone_and_a_desktop(browser, crowd_task, width):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    quiz = validator_quiz(crowd_task)
    wrong = {item.pk for n, item in enumerate(quiz.items.all()) if n in (1, 3)}
    worker = UserFactory(username=f"quiz-taker-{width}")
    browser.login(worker)
    try:
        with sized(browser, width):
            browser.go(f"/tasks/{crowd_task.slug}/quiz/validator/")
            for item in quiz.items.all():
                answer = item.answer if item.pk not in wrong else ("correct" if item.answer == "incorrect" else "incorrect")
                browser.find_element(By.CSS_SELECTOR, f"input[name=q{item.pk}][value={answer}]").click()
            browser.find_element(By.ID, "quiz-submit").click()
            WebDriverWait(browser, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
                lambda b: b.find_elements(By.ID, "quiz-marks"))
            marks = browser.find_elements(By.CSS_SELECTOR, "#quiz-marks li")
            assert [m.get_attribute("data-right") for m in marks] == ["true", "false", "true", "false"]
            assert "wrong" in marks[1].text and marks[1].is_displayed()
            assert too_wide(browser) is None
            shot(browser, "validator-quiz-result", width)
    finally:
        browser.get("about:blank")
