"""The owner's notifications console: add a webhook (its secret shown once), the list, a test event to a real HTTP
server, the delivery log, switching on again, deleting, and the form's errors."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from notify import events
from notify.models import Attempt, Webhook
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db

CONSOLE = "/tasks/sentiment/console/notifications/"


@pytest.fixture
def owner_client(task, personas) -> Client:
    client = Client()
    client.force_login(personas.owner)
    return client


def test_adding_a_webhook_shows_its_secret_once(owner_client, notify_settings):
    response = owner_client.post(CONSOLE, {"url": "https://hooks.example.org/in",
                                           "events": ["round_closed", "dataset_published"]})
    assert response.status_code == 200
    hook = Webhook.objects.get()
    page = response.content.decode()
    assert f'<code id="secret" class="secret">{hook.secret}</code>' in page and "not shown again" in page
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]+=*", hook.secret)
    assert hook.events == ["round_closed", "dataset_published"] and hook.created_by.username == "owner"
    again = owner_client.get(CONSOLE).content.decode()
    assert hook.secret not in again and "https://hooks.example.org/in" in again
    assert "Round closed" in again and "Dataset published" in again


def test_a_bad_address_goes_back_to_the_console_saying_why(owner_client, notify_settings):
    notify_settings.NOTIFY_ALLOW_PRIVATE = False
    response = owner_client.post(CONSOLE, {"url": "http://169.254.169.254/latest", "events": ["round_closed"]},
                                 follow=True)
    assert response.redirect_chain[-1][0] == CONSOLE
    assert "link-local" in response.content.decode() and "public addresses only" in response.content.decode()
    assert not Webhook.objects.exists()
    response = owner_client.post(CONSOLE, {"url": "https://hooks.example.org/in"}, follow=True)
    assert "choose at least one event" in response.content.decode()


def test_a_test_event_reaches_the_receiver_signed_and_shows_in_the_log(owner_client, receiver, notify_settings):
    owner_client.post(CONSOLE, {"url": receiver.url, "events": ["round_closed"]})
    hook = Webhook.objects.get()
    response = owner_client.post(f"{CONSOLE}webhooks/{hook.pk}/test/")
    assert response.status_code == 302 and response["Location"] == f"{CONSOLE}webhooks/{hook.pk}/"
    (got,) = receiver.wait_for(1)
    assert receiver.verified(hook.secret, got) and b'"type":"test"' in got.body
    log = owner_client.get(response["Location"]).content.decode()
    assert 'data-state="done"' in log and 'class="num status-code">200<' in log
    assert Attempt.objects.get().status_code == 200


def test_switching_on_again_and_deleting(owner_client, notify_settings):
    owner_client.post(CONSOLE, {"url": "https://hooks.example.org/in", "events": ["round_closed"]})
    hook = Webhook.objects.get()
    Webhook.objects.filter(pk=hook.pk).update(disabled_at="2026-01-01T00:00Z", disabled_reason="switched off: 5 "
                                              "deliveries in a row failed", consecutive_failures=5)
    page = owner_client.get(CONSOLE).content.decode()
    assert "switched off" in page and "Switch on again" in page and "Send a test event" not in page
    response = owner_client.post(f"{CONSOLE}webhooks/{hook.pk}/test/", follow=True)
    assert "switch it on first" in response.content.decode()
    owner_client.post(f"{CONSOLE}webhooks/{hook.pk}/enable/")
    hook.refresh_from_db()
    assert hook.active and hook.consecutive_failures == 0
    owner_client.post(f"{CONSOLE}webhooks/{hook.pk}/delete/")
    assert not Webhook.objects.exists()


def test_another_tasks_webhook_is_not_found_under_this_task(owner_client, notify_settings, personas):
    other = TaskFactory(slug="other")
    other.owners.add(personas.owner)
    hook = Webhook.objects.create(task=other, url="https://hooks.example.org/x", events=["round_closed"],
                                  secret="whsec_AAAA")
    assert owner_client.post(f"{CONSOLE}webhooks/{hook.pk}/delete/").status_code == 404
    assert Webhook.objects.filter(pk=hook.pk).exists()


def test_the_console_lists_events_and_mails_with_masked_addresses(owner_client, task, notify_settings):
    notify_settings.JOB_RUNNER = ""
    events.emit(task, "round_opened", {"round": 1})
    events.emit(task, "round_closed", {"round": 1})
    page = owner_client.get(CONSOLE).content.decode()
    assert page.index('data-event="round_closed"') < page.index('data-event="round_opened"')  # newest first
    assert "owner (o…@example.org)" in page and "owner@example.org" not in page and "pending" in page
