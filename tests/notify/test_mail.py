"""E-mail for the events, delivered to a real local SMTP server (aiosmtpd): recipients, subject, body; retried while
the server is down; recorded."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from notify import events, jobs, mail
from notify.models import Mail
from tests.factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def task(db):
    task = TaskFactory(slug="sentiment", kind="sentiment", name="Sentiment")
    task.owners.add(UserFactory(username="owner", email="owner@example.org"),
                    UserFactory(username="co-owner", email="co@example.org"),
                    UserFactory(username="silent", email=""),  # no address: no mail
                    UserFactory(username="gone", email="gone@example.org", is_active=False))
    return task


def test_the_owners_get_a_mail_on_the_real_smtp_server(task, smtp_server, notify_settings):
    event = events.emit(task, "round_closed", {"round": 3, "path": "/tasks/sentiment/console/rounds/"})
    messages = smtp_server.wait_for(2)
    assert sorted(r for recipients, _ in messages for r in recipients) == ["co@example.org", "owner@example.org"]
    recipients, message = messages[0]
    assert message["Subject"] == "[Sentiment] Round 3 is closed"
    assert message["From"] == "dynabench@example.org" and message["To"] == recipients[0]
    body = message.get_content()
    assert "Round 3 of Sentiment is closed: it takes no new examples." in body
    assert "/tasks/sentiment/console/rounds/" in body and "as an owner of the task" in body
    assert "&#x27;" not in body and "&amp;" not in body  # plain text, not HTML-escaped
    rows = list(Mail.objects.filter(event=event).order_by("address"))
    assert [(m.address, m.status, m.attempts) for m in rows] == [("co@example.org", "done", 1),
                                                                ("owner@example.org", "done", 1)]
    assert all(m.finished_at and m.subject == "[Sentiment] Round 3 is closed" for m in rows)


def test_each_event_has_its_subject_and_template(task, smtp_server, notify_settings):
    cases = [
        ("round_opened", {"round": 2, "description": "Harder examples, please."}, "[Sentiment] Round 2 is open",
         "Harder examples, please."),
        ("pipeline_waiting", {"run": 7, "reason": "the new ensemble is worse"},
         "[Sentiment] The next round waits for your approval (run 7)", "the new ensemble is worse"),
        ("pipeline_failed", {"run": 8, "error": "step train failed: out of memory"},
         "[Sentiment] The round pipeline failed (run 8)", "Error: step train failed: out of memory"),
        ("dataset_published", {"round": 1, "version": 2, "counts": {"train": 80, "dev": 10}},
         "[Sentiment] Round 1 dataset v2 is published", "train: 80"),
    ]
    for kind, data, _subject, _line in cases:
        events.emit(task, kind, data)
    got = {m["Subject"]: m.get_content() for recipients, m in smtp_server.wait_for(2 * len(cases))
           if recipients == ["owner@example.org"]}
    for kind, _data, subject, line in cases:
        assert line in got[subject], kind


def test_an_appeal_decided_is_mailed_to_its_writer_only(task, smtp_server, notify_settings):
    writer = UserFactory(username="writer", email="writer@example.org")
    events.emit(task, "appeal_decided", {"example": 12, "round": 1, "outcome": "verified"}, people=[writer])
    ((recipients, message),) = smtp_server.wait_for(1)
    assert recipients == ["writer@example.org"]
    assert message["Subject"] == "[Sentiment] Your appeal was decided"
    body = message.get_content()
    assert body.startswith("Hello writer,") and "example 12 (round 1 of Sentiment)" in body
    assert "Your label stands" in body


def test_a_mail_server_that_is_down_is_tried_again_then_the_mail_arrives(task, smtp_server, notify_settings):
    notify_settings.JOB_RUNNER = ""  # sent by hand below, as a job thread does
    real_port = smtp_server.port
    from tests.notify.conftest import free_port

    notify_settings.EMAIL_PORT = free_port()  # nothing listens there
    event = events.emit(task, "round_opened", {"round": 1})
    pk = event.mails.get(address="owner@example.org").pk
    assert mail.attempt(pk).state == "retry"
    row = Mail.objects.get(pk=pk)
    assert row.status == "pending" and row.attempts == 1 and "ConnectionRefusedError" in row.last_error
    notify_settings.EMAIL_PORT = real_port  # the server is back
    assert mail.attempt(pk).state == "busy"  # not due yet: the backoff holds
    time.sleep(max(0.0, (row.next_attempt_at - timezone.now()).total_seconds()))
    assert jobs.run(mail.attempt, pk, wait=True) == "delivered"
    row.refresh_from_db()
    assert row.status == "done" and row.attempts == 2 and row.last_error == ""
    assert smtp_server.wait_for(1)[0][0] == ["owner@example.org"]


def test_a_mail_is_failed_after_every_try(task, notify_settings):
    notify_settings.JOB_RUNNER = ""
    notify_settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    from tests.notify.conftest import free_port

    notify_settings.EMAIL_HOST, notify_settings.EMAIL_PORT = "127.0.0.1", free_port()
    event = events.emit(task, "round_opened", {"round": 1})
    pk = event.mails.get(address="owner@example.org").pk
    assert jobs.run(mail.attempt, pk, wait=True) == "failed"
    row = Mail.objects.get(pk=pk)
    assert row.status == "failed" and row.attempts == notify_settings.NOTIFY_MAX_ATTEMPTS and row.last_error


def test_one_mail_per_address(task, notify_settings):
    notify_settings.JOB_RUNNER = ""
    same = UserFactory(username="twin", email="OWNER@example.org")
    event = events.emit(task, "round_opened", {"round": 1}, people=[same])
    assert sorted(event.mails.values_list("address", flat=True)) == ["co@example.org", "owner@example.org"]
