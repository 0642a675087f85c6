"""A webhook server that is slow or down, and a mail server, delay nothing in the action that caused the event: the
action commits and returns while the slow server still holds its answer (an order of events, not a timing), and the jobs (threads of this process, the embedded default) deliver afterwards.
Real commits (a transactional test), a real HTTP server and a real SMTP server."""

from __future__ import annotations

import threading
import time

import pytest
from django.test import Client
from django.urls import reverse

from annotation import services as annotation_services
from annotation.models import Example
from notify import webhooks
from notify.models import Delivery, Event, Mail
from tasks import round_state
from tests.factories import ExampleFactory, RoundFactory, TaskFactory, UserFactory
from tests.notify.conftest import free_port
from tests.personas import make_personas

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_DELAY = 4.0


@pytest.fixture
def embedded(settings, notify_settings):
    settings.JOB_RUNNER = ""  # the embedded default: each job a thread of this process, started on commit
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOTIFY_TIMEOUT_SECONDS = 10.0
    return settings


def wait_for_job_threads(timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread.name.startswith("job-notify") and thread.is_alive():
            thread.join(max(0.0, deadline - time.monotonic()))


def test_closing_a_round_returns_at_once_while_webhooks_are_slow_or_down(embedded, receiver, smtp_server):
    task = TaskFactory(slug="sentiment", kind="sentiment", name="Sentiment")
    task.owners.add(UserFactory(username="owner", email="owner@example.org"))
    round_ = RoundFactory(task=task, number=1)
    receiver.delay = SERVER_DELAY
    slow = webhooks.add(task, receiver.url, ["round_closed"])
    down = webhooks.add(task, f"http://127.0.0.1:{free_port()}/down", ["round_closed"])

    reverse("notify-console", args=["sentiment"])  # the URLconf loaded, as in any web process that served a page
    round_state.close_round(round_)  # commits (autocommit): the jobs start now, in threads
    # The action is back while the slow server still holds its answer (SERVER_DELAY s): it did not wait for it.
    assert Delivery.objects.get(webhook=slow).status != Delivery.Status.DONE
    round_.refresh_from_db()
    assert round_.status == "closed"  # committed before any delivery

    wait_for_job_threads()
    event = Event.objects.get(kind="round_closed")
    assert Delivery.objects.get(event=event, webhook=slow).status == Delivery.Status.DONE
    assert receiver.verified(slow.secret, receiver.requests[0])
    failed = Delivery.objects.get(event=event, webhook=down)
    assert failed.status == Delivery.Status.FAILED and failed.attempts == embedded.NOTIFY_MAX_ATTEMPTS
    assert Mail.objects.get(event=event).status == Mail.Status.DONE
    assert smtp_server.wait_for(1)[0][0] == ["owner@example.org"]


def test_an_expert_deciding_an_appeal_gets_the_page_at_once_while_the_webhook_is_slow(embedded, receiver,
                                                                                     smtp_server):
    task = TaskFactory(slug="sentiment", kind="sentiment", name="Sentiment")
    people = make_personas(task)
    round_ = RoundFactory(task=task, number=1)
    receiver.delay = SERVER_DELAY
    webhooks.add(task, receiver.url, ["appeal_decided"])
    example = ExampleFactory(round=round_, author=people.annotator, consensus=Example.Consensus.REJECTED)
    annotation_services.appeal(example, "the label was right")
    client = Client()
    client.force_login(people.expert)

    response = client.post(f"/tasks/sentiment/expert/{example.pk}/resolve/", {"verdict": "correct"})
    assert response.status_code == 302
    # The page is back while the slow server still holds its answer (SERVER_DELAY s): it did not wait for it.
    assert Delivery.objects.get().status != Delivery.Status.DONE

    wait_for_job_threads()
    assert Delivery.objects.get().status == Delivery.Status.DONE
    ((recipients, message),) = smtp_server.wait_for(1)
    assert recipients == [people.annotator.email] and message["Subject"] == "[Sentiment] Your appeal was decided"
