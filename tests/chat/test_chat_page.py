"""The writer's chat pages in real headless Chromium, the targets served by a real OpenAI-compatible HTTP server on
127.0.0.1 (the operator's endpoints, LLM_ENDPOINTS, allowed on the loopback): a writer confirms the guidelines, starts
a conversation, sends a message and sees it at once, sees the answer being written and then arrive (polled, never a
reload), rates it, marks it as failing with a reason, has a failed answer written again, and finishes; a pairwise
writer chooses the better of two answers before the next message. What the page did is checked in the database.
Pictures: var/screenshots/chat-1400.png, chat-420.png (and chat-pairwise-*), copied to docs/gallery/."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from chat.models import Conversation, Failure, Message, Preference, Rating
from tasks import guidelines, roles
from tests.factories import RoundFactory, TaskFactory, UserFactory
from tests.llm.endpoints import use_endpoint
from tests.site.screens import shot, sized, too_wide

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class _Model(BaseHTTPRequestHandler):
    """A tiny OpenAI-compatible chat endpoint: answers as the persona its system prompt names, after `delay`
    seconds (so the page shows the answer being written); 503 while the server is `down`."""

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # /v1/models (the provider's health)
        self._send(200, {"data": [{"id": "tiny-chat"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.seen.append(body)
        time.sleep(self.server.delay)
        if self.server.down:
            return self._send(503, {"error": {"message": "overloaded"}})
        messages = body.get("messages", [])
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        persona = "Alpha" if "Alpha" in system else "Beta"
        said = [m["content"] for m in messages if m["role"] == "user"][-1]
        city = "Sydney" if persona == "Alpha" else "Canberra"
        text = f"{persona} here. You asked: {said} I say the capital is {city}."
        return self._send(200, {"model": "tiny-chat", "choices": [{"message": {"role": "assistant", "content": text}}],
                                "usage": {"prompt_tokens": 20, "completion_tokens": 12}})

    def _send(self, code: int, payload: dict) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def model_server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    httpd.seen, httpd.delay, httpd.down = [], 0.8, False
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def chat_task(settings, model_server):
    """A chat task whose targets are the test server, with one open round; `make(scale)`."""
    settings.CHAT_GENERATION_ATTEMPTS = 1  # a down endpoint fails the answer at once (the page offers "Try again")
    settings.CHAT_RETRY_BACKOFF_SECONDS = 0.1
    provider = use_endpoint(settings, f"http://127.0.0.1:{model_server.server_address[1]}/v1", name="tiny",
                            model="tiny-chat", timeout_s=5)

    def make(scale: str, slug: str):
        targets = [{"name": "alpha", "provider": provider, "system_prompt": "You are Alpha.", "seed": 1},
                   {"name": "beta", "provider": provider, "system_prompt": "You are Beta.", "seed": 1}]
        task = TaskFactory(slug=slug, kind="chat", name="Chat with models",
                           config={"chat": {"targets": targets if scale == "pairwise" else targets[:1], "scale": scale,
                                            "max_turns": 3}})
        RoundFactory(task=task, number=1)
        return task

    return make


@pytest.fixture
def writer(db):
    user = UserFactory(username="writer")
    roles.grant(user, roles.ANNOTATOR)
    return user


def wait(browser, seconds: float = 20) -> WebDriverWait:
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def by_id(browser, name: str):
    return browser.find_element(By.ID, name)


def start_conversation(browser, task) -> Conversation:
    browser.go(f"/tasks/{task.slug}/chat/")
    by_id(browser, "start").click()
    wait(browser).until(lambda b: b.execute_script("return document.body.dataset.chatReady === '1'"))
    convo = Conversation.objects.get(writer__username="writer", round__task=task)
    assert browser.current_url.endswith(f"/tasks/{task.slug}/chat/{convo.pk}/")
    browser.execute_script("window.notReloaded = true;")
    return convo


def send(browser, text: str) -> None:
    box = by_id(browser, "message-text")
    box.send_keys(text)
    box.send_keys(Keys.CONTROL, Keys.ENTER)


def shown(element) -> bool:
    """Not `hidden` (Selenium's is_displayed() says True for a link whose `hidden` attribute the CSS honours)."""
    return element.get_attribute("hidden") is None


def answer_card(browser, message: Message):
    return browser.find_element(By.CSS_SELECTOR, f'article.answer[data-message="{message.pk}"]')


def test_a_writer_talks_rates_marks_retries_and_finishes(browser, writer, chat_task, model_server):
    task = chat_task("slider", "chat")
    guidelines.publish(task, "Ask questions whose answers you can check.")
    browser.login(writer)
    # The guidelines come first: the start button waits for them, and they are confirmed in place.
    browser.go(f"/tasks/{task.slug}/chat/")
    assert not by_id(browser, "start").is_enabled() and shown(by_id(browser, "guidelines-gate"))
    by_id(browser, "guidelines-ack").click()
    wait(browser).until(lambda b: by_id(b, "start").is_enabled())
    convo = start_conversation(browser, task)
    assert "Talk with the model" in by_id(browser, "chat-instructions").text

    # The message shows at once; the answer is being written, and the box says why it waits.
    send(browser, "What is the capital of Australia?")
    wait(browser, 5).until(lambda b: b.find_elements(By.CSS_SELECTOR, "article.answer.pending"))
    mine = browser.find_element(By.CSS_SELECTOR, "li.turn[data-turn='0'] .bubble.mine")
    assert "What is the capital of Australia?" in mine.text
    assert "writing…" in browser.find_element(By.CSS_SELECTOR, "article.answer.pending").text
    assert not by_id(browser, "message-text").is_enabled()
    assert "Model A is writing" in by_id(browser, "composer-status").text
    wait(browser).until(lambda b: b.find_elements(By.CSS_SELECTOR, "article.answer.ready"))
    answer = Message.objects.get(conversation=convo, turn=0, role="assistant")
    card = answer_card(browser, answer)
    assert "Alpha here. You asked: What is the capital of Australia? I say the capital is Sydney." in card.text
    assert card.find_element(By.CSS_SELECTOR, ".speaker").text == "MODEL A" and "(alpha)" not in card.text  # blinded
    wait(browser, 5).until(lambda b: by_id(b, "message-text").is_enabled())
    assert by_id(browser, "composer-status").text == ""
    assert browser.execute_script("return window.notReloaded === true;")

    # The slider, with the keyboard: saved as it moves.
    slider = by_id(browser, f"rating-{answer.pk}")
    slider.send_keys(Keys.HOME)
    for _ in range(15):
        slider.send_keys(Keys.ARROW_RIGHT)
    wait(browser).until(lambda b: by_id(b, f"rating-note-{answer.pk}").text.startswith("Saved"))
    assert by_id(browser, f"rating-note-{answer.pk}").text == "Saved: 15 of 100."
    assert Rating.objects.get(message=answer, rater=writer).score == 15
    assert by_id(browser, f"rating-value-{answer.pk}").text == "15"

    # Mark it as failing (with the keyboard): a category and a reason, both required.
    by_id(browser, f"mark-{answer.pk}").send_keys(Keys.ENTER)
    assert by_id(browser, f"mark-{answer.pk}").get_attribute("aria-expanded") == "true"
    assert browser.switch_to.active_element == by_id(browser, f"category-{answer.pk}")
    Select(by_id(browser, f"category-{answer.pk}")).select_by_value("wrong")
    by_id(browser, f"save-failure-{answer.pk}").click()
    assert by_id(browser, f"failure-error-{answer.pk}").text == "Say why the answer fails."
    assert not Failure.objects.exists()
    by_id(browser, f"reason-{answer.pk}").send_keys("The capital of Australia is Canberra, not Sydney.")
    by_id(browser, f"save-failure-{answer.pk}").click()
    wait(browser).until(lambda b: b.find_elements(By.ID, f"marked-{answer.pk}"))
    assert "Marked as failing Wrong: The capital of Australia is Canberra, not Sydney." in by_id(
        browser, f"marked-{answer.pk}").text
    failure = Failure.objects.get(message=answer)
    assert (failure.category, failure.reason, failure.author) == (
        "wrong", "The capital of Australia is Canberra, not Sydney.", writer)

    # The endpoint goes down: the answer says why, and "Try again" writes it once it is back.
    model_server.down = True
    send(browser, "Are you sure?")
    wait(browser).until(lambda b: b.find_elements(By.CSS_SELECTOR, "article.answer.failed"))
    failed = Message.objects.get(conversation=convo, turn=1, role="assistant")
    assert failed.state == "failed" and failed.error
    card = answer_card(browser, failed)
    assert failed.error in card.text and "Model A could not answer" in card.text
    assert "127.0.0.1" not in card.text  # the endpoint is named, never its address
    wait(browser, 5).until(lambda b: by_id(b, "message-text").is_enabled())  # the writer may also go on without it
    model_server.down = False
    by_id(browser, f"retry-{failed.pk}").click()
    wait(browser).until(lambda b: "You asked: Are you sure?" in answer_card(b, failed).text)
    failed.refresh_from_db()
    assert failed.state == "ready" and failed.usage["calls"] >= 1
    # the second call read the first exchange: the model saw the conversation so far
    assert [m["content"] for m in model_server.seen[-1]["messages"] if m["role"] == "user"] == [
        "What is the capital of Australia?", "Are you sure?"]
    assert browser.execute_script("return window.notReloaded === true;")

    # The pictures: the conversation, at a desktop's and a phone's width.
    for width in (1400, 420):
        with sized(browser, width):
            assert too_wide(browser) is None, too_wide(browser)
            browser.execute_script("document.getElementById('transcript-heading').scrollIntoView({block: 'start'})")
            shot(browser, "chat", width)

    # Finish: the box closes and says why; the page offers another conversation.
    by_id(browser, "finish").click()
    wait(browser).until(lambda b: shown(by_id(b, "another")))
    assert not by_id(browser, "message-text").is_enabled()
    assert by_id(browser, "composer-status").text == "This conversation is finished."
    convo.refresh_from_db()
    assert convo.state == "closed"
    assert list(convo.messages.filter(role="user").values_list("text", flat=True)) == [
        "What is the capital of Australia?", "Are you sure?"]


def test_a_pairwise_writer_chooses_before_the_next_message(browser, writer, chat_task):
    task = chat_task("pairwise", "chat-pair")
    browser.login(writer)
    convo = start_conversation(browser, task)
    send(browser, "What is the capital of Australia?")
    wait(browser).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "article.answer.ready")) == 2)
    answers = {m.slot: m for m in Message.objects.filter(conversation=convo, role="assistant")}
    cards = [answer_card(browser, answers[0]), answer_card(browser, answers[1])]
    assert [c.find_element(By.CSS_SELECTOR, ".speaker").text for c in cards] == ["MODEL A", "MODEL B"]
    assert cards[0].rect["y"] == cards[1].rect["y"] and cards[0].rect["x"] < cards[1].rect["x"]  # side by side
    assert not by_id(browser, "message-text").is_enabled()
    assert "Choose the better answer" in by_id(browser, "composer-status").text
    assert not browser.find_elements(By.CSS_SELECTOR, "input[type=range]")  # no slider on a pairwise task

    with sized(browser, 420):
        cards = [answer_card(browser, answers[0]), answer_card(browser, answers[1])]
        assert cards[0].rect["x"] == cards[1].rect["x"] and cards[0].rect["y"] < cards[1].rect["y"]  # stacked
        assert too_wide(browser) is None, too_wide(browser)
        browser.execute_script("document.getElementById('choice-0').scrollIntoView({block: 'center'})")
        shot(browser, "chat-pairwise", 420)
    with sized(browser, 1400):
        shot(browser, "chat-pairwise", 1400)

    by_id(browser, "choice-reason-0").send_keys("It names the right city.")
    canberra = 0 if "Canberra" in answers[0].text else 1
    by_id(browser, f"choose-0-{canberra}").send_keys(Keys.ENTER)  # keyboard
    wait(browser).until(lambda b: by_id(b, "message-text").is_enabled())
    assert browser.switch_to.active_element == by_id(browser, "message-text")
    legend = browser.find_element(By.CSS_SELECTOR, "#choice-0 legend").text
    assert legend.startswith(f"Your choice: Model {'AB'[canberra]} is better")
    preference = Preference.objects.get(conversation=convo, turn=0)
    assert (preference.winner_slot, preference.reason, preference.rater) == (canberra, "It names the right city.", writer)
    assert Message.objects.get(conversation=convo, turn=0, slot=canberra).chosen
    assert not Message.objects.get(conversation=convo, turn=0, slot=1 - canberra).chosen

    # the next message goes on with the chosen answer; the earlier choice is then only shown
    send(browser, "Why that city?")
    wait(browser).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "article.answer.ready")) == 4)
    assert by_id(browser, "choice-0").text.startswith(f"Your choice: Model {'AB'[canberra]} is better")
    assert by_id(browser, "choice-1").tag_name == "fieldset"
    assert browser.execute_script("return window.notReloaded === true;")
