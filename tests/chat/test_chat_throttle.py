"""Asking a chat task's models is rate-limited per writer and task (the task's `submission_rate`): over it the answer
is 429 with Retry-After and a sentence, and nothing is stored."""

from __future__ import annotations

from django.urls import reverse

from chat.models import Conversation, Message
from tests.chat.test_conversations import (  # noqa: F401 - fixtures
    _fast,
    chat_server,
    chat_task,
    client_of,
    inline,
    say,
    start,
    targets_on,
    writer,
)


def test_starting_conversations_past_the_tasks_rate_is_429_and_stores_nothing(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server))
    task.config = {**task.config, "submission_rate": "2/min"}
    task.save(update_fields=["config"])
    client = client_of(writer)
    start(client, task)
    start(client, task)
    response = client.post(reverse("api-chat-conversations", args=[task.slug]), {}, format="json")
    assert response.status_code == 429
    assert "faster than this task allows (2/min)" in response.json()["detail"]
    assert int(response["Retry-After"]) > 0
    assert Conversation.objects.filter(writer=writer).count() == 2


def test_messages_count_against_the_same_rate(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server))
    task.config = {**task.config, "submission_rate": "3/min"}
    task.save(update_fields=["config"])
    client = client_of(writer)
    convo = start(client, task)  # 1
    assert say(client, convo, "Hello there.").status_code == 202  # 2 (answered inline)
    assert say(client, convo, "And again.").status_code == 202  # 3
    response = say(client, convo, "One too many.")
    assert response.status_code == 429 and "try again in" in response.json()["detail"]
    assert Message.objects.filter(conversation_id=convo["id"], role="user").count() == 2
