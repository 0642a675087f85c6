"""The writer's chat pages, server side (chat/views.py): who may open them, and what they show before chat.js
takes over — the writer's own conversations only, the blinded names (never a target's), each answer's state, the
writer's rating, choice and mark, the task's instructions and guidelines, and why the message box is closed."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from chat.models import Conversation, Failure, Message, Preference, Rating
from tasks import guidelines, roles
from tests.factories import RoundFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

TARGETS = [{"name": "zebra-bot", "system_prompt": "Answer briefly."},
           {"name": "okapi-bot", "system_prompt": "Answer playfully."}]


def chat_task(slug="chat", **chat):
    task = TaskFactory(slug=slug, kind="chat", config={"chat": {"targets": TARGETS, **chat}})
    return task, RoundFactory(task=task, number=1)


@pytest.fixture
def people():
    owner, writer, other = UserFactory(username="owner"), UserFactory(username="writer"), UserFactory(username="other")
    validator = UserFactory(username="validator")
    roles.grant(writer, roles.ANNOTATOR)
    roles.grant(other, roles.ANNOTATOR)
    roles.grant(validator, roles.VALIDATOR)
    return {"owner": owner, "writer": writer, "other": other, "validator": validator}


def conversation(round_, writer, scale="slider", targets=("zebra-bot",), blinded=True, **fields):
    return Conversation.objects.create(round=round_, writer=writer, scale=scale, targets=list(targets),
                                       blinded=blinded, target_settings={}, **fields)


def exchange(convo, turn, text, answers):
    Message.objects.create(conversation=convo, turn=turn, role="user", text=text)
    return [Message.objects.create(conversation=convo, turn=turn, role="assistant", slot=slot,
                                   target=convo.targets[slot], **fields) for slot, fields in enumerate(answers)]


def client(user=None) -> Client:
    c = Client()
    if user is not None:
        c.force_login(user)
    return c


def page_config(html: str, name="chat-config") -> dict:
    found = re.search(rf'<script id="{name}" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(found.group(1))


# --- the conversations page ----------------------------------------------------------------------------------


def test_the_list_shows_the_writers_own_conversations_and_the_start_button(people):
    task, round_ = chat_task()
    mine = conversation(round_, people["writer"])
    exchange(mine, 0, "Hello?", [{"state": "ready", "text": "Hi."}])
    theirs = conversation(round_, people["other"])
    page = client(people["writer"]).get("/tasks/chat/chat/")
    html = page.content.decode()
    assert page.status_code == 200
    assert f"/tasks/chat/chat/{mine.pk}/" in html and f"/tasks/chat/chat/{theirs.pk}/" not in html
    assert 'id="start"' in html and "Start a conversation" in html
    config = page_config(html, "chat-list-config")
    assert config["urls"]["start"] == "/api/tasks/chat/chat/conversations/"
    assert config["page"] == "/tasks/chat/chat/{id}/"
    row = re.search(rf'<tr data-conversation="{mine.pk}">(.*?)</tr>', html, re.S).group(1)
    assert re.findall(r'<td class="num">(\d+)</td>', row) == ["1", "0"]  # one message, none marked


def test_the_list_says_when_no_round_is_open_and_offers_no_button(people):
    TaskFactory(slug="chat", kind="chat", config={"chat": {"targets": TARGETS}})
    html = client(people["writer"]).get("/tasks/chat/chat/").content.decode()
    assert 'id="no-round"' in html and 'id="start"' not in html
    assert "You have not started a conversation" in html


def test_only_writers_open_the_list_and_only_on_a_chat_task(people):
    chat_task()
    sentiment = TaskFactory(slug="sentiment", kind="sentiment")
    RoundFactory(task=sentiment, number=1)
    assert client(people["validator"]).get("/tasks/chat/chat/").status_code == 403
    assert client(people["writer"]).get("/tasks/sentiment/chat/").status_code == 404
    anonymous = client().get("/tasks/chat/chat/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    hidden = TaskFactory(slug="secret", kind="chat", visibility="hidden", config={})
    assert client(people["writer"]).get(f"/tasks/{hidden.slug}/chat/").status_code == 404


# --- one conversation -----------------------------------------------------------------------------------------


def test_the_writer_sees_their_conversation_blinded_with_rating_and_mark(people):
    task, round_ = chat_task()
    guidelines.publish(task, "Ask about facts you can check.", by=people["owner"])
    convo = conversation(round_, people["writer"])
    [answer] = exchange(convo, 0, "What is the capital of Australia?", [{"state": "ready", "text": "Sydney."}])
    Rating.objects.create(message=answer, rater=people["writer"], score=12)
    Failure.objects.create(message=answer, author=people["writer"], category="wrong", reason="It is Canberra.")
    html = client(people["writer"]).get(f"/tasks/chat/chat/{convo.pk}/").content.decode()
    assert "What is the capital of Australia?" in html and "Sydney." in html
    assert "Model A" in html and "zebra-bot" not in html and "okapi-bot" not in html  # blinded
    assert "Your rating: <strong>12</strong>" in html
    assert "Marked as failing</span> <strong>Wrong</strong>: It is Canberra." in html
    # the task's instructions, and its guidelines with the form that confirms them (the same partial as create)
    assert 'id="chat-instructions"' in html and "Talk with the model and try to make it fail" in html
    assert 'id="guidelines-panel"' in html and "Ask about facts you can check." in html
    assert 'id="guidelines-ack-form"' in html
    config = page_config(html)
    assert config["scale"] == "slider" and config["slots"] == ["Model A"] and config["writer"] is True
    assert config["urls"]["messages"] == f"/api/chat/conversations/{convo.pk}/messages/"
    assert config["urls"]["conversation"] == f"/api/chat/conversations/{convo.pk}/"
    assert {c["name"] for c in config["categories"]} >= {"wrong", "unsafe", "needless_refusal"}
    assert "zebra-bot" not in json.dumps(config)
    assert 'id="message-text"' in html and "disabled" not in re.search(r"<textarea[^>]*>", html).group(0)


def test_someone_elses_conversation_does_not_exist_for_a_writer_and_managers_read_it(people):
    task, round_ = chat_task()
    task.owners.add(people["owner"])
    convo = conversation(round_, people["writer"])
    exchange(convo, 0, "Hello?", [{"state": "ready", "text": "Hi there."}])
    path = f"/tasks/chat/chat/{convo.pk}/"
    assert client(people["other"]).get(path).status_code == 404
    assert client(people["validator"]).get(path).status_code == 404
    assert client(people["writer"]).get(f"/tasks/other/chat/{convo.pk}/").status_code == 404
    other_task, _ = chat_task(slug="other")
    assert client(people["writer"]).get(f"/tasks/{other_task.slug}/chat/{convo.pk}/").status_code == 404
    owner = client(people["owner"]).get(path).content.decode()
    assert 'id="read-only"' in owner and 'id="composer"' not in owner and "chat.js" not in owner
    assert "Model A (zebra-bot)" in owner  # the task's managers see what answered


def test_an_unblinded_task_names_its_models_to_the_writer(people):
    task, round_ = chat_task(blinded=False)
    convo = conversation(round_, people["writer"], blinded=False)
    exchange(convo, 0, "Hello?", [{"state": "ready", "text": "Hi."}])
    html = client(people["writer"]).get(f"/tasks/chat/chat/{convo.pk}/").content.decode()
    assert "Model A (zebra-bot)" in html


def test_pending_and_failed_answers_and_why_the_box_is_closed(people):
    task, round_ = chat_task(scale="pairwise")
    convo = conversation(round_, people["writer"], scale="pairwise", targets=("zebra-bot", "okapi-bot"))
    exchange(convo, 0, "Tell me a fact.", [{"state": "pending"},
                                           {"state": "failed", "error": "Model B could not answer: it is down."}])
    html = client(people["writer"]).get(f"/tasks/chat/chat/{convo.pk}/").content.decode()
    assert "writing…" in html and "Model B could not answer: it is down." in html
    assert re.search(r'<textarea[^>]*disabled', html)
    assert "The models are still answering your last message" in html
    assert 'class="transcript pairwise"' in html


def test_a_pairwise_choice_is_asked_for_then_shown(people):
    task, round_ = chat_task(scale="pairwise")
    convo = conversation(round_, people["writer"], scale="pairwise", targets=("okapi-bot", "zebra-bot"))
    exchange(convo, 0, "Tell me a fact.", [{"state": "ready", "text": "Water is wet."},
                                           {"state": "ready", "text": "The sky is green."}])
    html = client(people["writer"]).get(f"/tasks/chat/chat/{convo.pk}/").content.decode()
    assert "Choose the better answer to your last message" in html
    Preference.objects.create(conversation=convo, turn=0, rater=people["writer"], winner_slot=0)
    html = client(people["writer"]).get(f"/tasks/chat/chat/{convo.pk}/").content.decode()
    assert "Your choice: <strong>Model A is better</strong>" in html
    assert not re.search(r'<textarea[^>]*disabled', html)


def test_a_finished_conversation_and_the_last_turn_close_the_box(people):
    task, round_ = chat_task(max_turns=1)
    convo = conversation(round_, people["writer"])
    exchange(convo, 0, "Only one.", [{"state": "ready", "text": "Indeed."}])
    html = client(people["writer"]).get(f"/tasks/chat/chat/{convo.pk}/").content.decode()
    assert "reached its limit of 1 messages" in html and re.search(r'<textarea[^>]*disabled', html)
    Conversation.objects.filter(pk=convo.pk).update(state="closed")
    html = client(people["writer"]).get(f"/tasks/chat/chat/{convo.pk}/").content.decode()
    assert "This conversation is finished" in html and 'id="convo-state">Finished' in html
    assert re.search(r'<a class="button secondary" id="another"[^>]*>', html).group(0).count("hidden") == 0


def test_a_writer_who_lost_the_role_reads_but_may_not_send(people):
    task, round_ = chat_task()
    convo = conversation(round_, people["validator"])  # written while they were a writer; no longer one
    html = client(people["validator"]).get(f"/tasks/chat/chat/{convo.pk}/").content.decode()
    assert "Only the task&#x27;s writers may send messages." in html
    assert re.search(r'<textarea[^>]*disabled', html) and page_config(html)["writer"] is False
