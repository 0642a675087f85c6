"""Outgoing webhooks against a real HTTP server in a thread: signed requests verified on the receiving side, retries
with backoff, switching off after repeated failures, the console's delivery log, the address rules."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dynabench_site.errors import Conflict, InvalidInput
from notify import events, jobs, webhooks
from notify.models import Attempt, Delivery, Event, Webhook
from tests.factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def owned(db):
    task = TaskFactory(slug="sentiment", kind="sentiment")
    owner = UserFactory(username="owner", email="")  # no address: these tests are about webhooks
    task.owners.add(owner)
    return task, owner


def deliver_all(event: Event) -> list[str]:
    """Every delivery of `event`, each tried until done (waiting out the backoff, as a job thread does)."""
    return [jobs.run(webhooks.attempt, d.pk, wait=True) for d in event.deliveries.order_by("pk")]


def test_a_delivery_is_signed_and_the_receiver_verifies_it(owned, receiver, notify_settings):
    task, owner = owned
    notify_settings.JOB_RUNNER = ""  # queued for the commit a test transaction never reaches: sent by hand below
    hook = webhooks.add(task, receiver.url, ["round_closed"], by=owner)
    event = events.emit(task, "round_closed", {"round": 1})
    assert deliver_all(event) == ["delivered"]
    (got,) = receiver.requests
    assert got.path == "/hooks/in" and got.headers["content-type"] == "application/json"
    assert got.headers["webhook-id"] == event.msg_id
    assert receiver.verified(hook.secret, got)
    assert not receiver.verified(webhooks.new_secret(), got)
    payload = json.loads(got.body)
    assert payload["type"] == "round_closed" and payload["data"]["round"] == 1
    assert payload["data"]["task"] == {"slug": "sentiment", "name": task.name}
    (attempt,) = Attempt.objects.filter(delivery__webhook=hook)
    assert attempt.status_code == 200 and attempt.error == "" and attempt.number == 1
    assert Delivery.objects.get().status == Delivery.Status.DONE


def test_only_webhooks_that_chose_the_event_and_are_on_get_it(owned, receiver, notify_settings):
    task, owner = owned
    notify_settings.JOB_RUNNER = ""
    wants = webhooks.add(task, receiver.url, ["round_opened", "round_closed"])
    webhooks.add(task, receiver.url + "?other", ["dataset_published"])
    off = webhooks.add(task, receiver.url + "?off", ["round_closed"])
    Webhook.objects.filter(pk=off.pk).update(disabled_at=timezone.now(), disabled_reason="test")
    other_task = TaskFactory(slug="other")
    webhooks.add(other_task, receiver.url, ["round_closed"])
    event = events.emit(task, "round_closed", {"round": 1})
    assert [d.webhook_id for d in event.deliveries.all()] == [wants.pk]


def test_fails_twice_then_answers_200_retried_with_doubling_waits(owned, receiver, notify_settings):
    task, _ = owned
    notify_settings.JOB_RUNNER = ""
    notify_settings.NOTIFY_RETRY_BASE_SECONDS = 0.3
    notify_settings.NOTIFY_RETRY_MAX_SECONDS = 10
    receiver.script = [500, 503, 200]
    hook = webhooks.add(task, receiver.url, ["round_closed"])
    event = events.emit(task, "round_closed", {"round": 1})
    assert deliver_all(event) == ["delivered"]
    got = receiver.requests
    assert len(got) == 3
    assert len({r.headers["webhook-id"] for r in got}) == 1  # the same message on every try: receivers drop repeats
    assert all(receiver.verified(hook.secret, r) for r in got)
    first_wait, second_wait = got[1].at - got[0].at, got[2].at - got[1].at
    assert 0.3 <= first_wait < 1.5 and 0.6 <= second_wait < 2.0  # base, then doubled
    log = list(Attempt.objects.filter(delivery__webhook=hook).order_by("number"))
    assert [(a.number, a.status_code) for a in log] == [(1, 500), (2, 503), (3, 200)]
    assert log[0].error.startswith("HTTP 500") and log[2].error == ""
    assert all(a.duration_ms >= 0 for a in log)
    hook.refresh_from_db()
    assert hook.consecutive_failures == 0 and hook.active


def test_backoff_doubles_up_to_the_maximum(settings):
    settings.NOTIFY_RETRY_BASE_SECONDS, settings.NOTIFY_RETRY_MAX_SECONDS = 10, 60
    assert [webhooks.backoff_seconds(n) for n in range(1, 6)] == [10, 20, 40, 60, 60]


def test_a_webhook_failing_delivery_after_delivery_is_switched_off_and_the_console_says_so(owned, receiver,
                                                                                           notify_settings):
    task, owner = owned
    notify_settings.JOB_RUNNER = ""
    notify_settings.NOTIFY_MAX_ATTEMPTS, notify_settings.NOTIFY_DISABLE_AFTER = 2, 2
    receiver.script = [500]
    hook = webhooks.add(task, receiver.url, ["round_opened", "round_closed"])
    first = events.emit(task, "round_opened", {"round": 1})
    assert deliver_all(first) == ["failed"]
    hook.refresh_from_db()
    assert hook.active and hook.consecutive_failures == 1
    second = events.emit(task, "round_closed", {"round": 1})
    assert deliver_all(second) == ["failed"]
    hook.refresh_from_db()
    assert not hook.active and hook.consecutive_failures == 2
    assert "2 deliveries in a row failed" in hook.disabled_reason and "HTTP 500" in hook.disabled_reason
    assert len(receiver.requests) == 4  # two tries per delivery
    # a switched-off webhook gets no new deliveries
    assert events.emit(task, "round_opened", {"round": 2}).deliveries.count() == 0

    client = Client()
    client.force_login(owner)
    page = client.get("/tasks/sentiment/console/notifications/").content.decode()
    assert "switched off" in page and "2 deliveries in a row failed" in page
    log = client.get(f"/tasks/sentiment/console/notifications/webhooks/{hook.pk}/").content.decode()
    assert log.count('class="attempt bad"') == 4 and "HTTP 500" in log and " ms</td>" in log
    assert first.msg_id in log and second.msg_id in log

    response = client.post(f"/tasks/sentiment/console/notifications/webhooks/{hook.pk}/enable/")
    assert response.status_code == 302
    hook.refresh_from_db()
    assert hook.active and hook.consecutive_failures == 0 and hook.disabled_reason == ""


def test_a_success_between_failures_resets_the_count(owned, receiver, notify_settings):
    task, _ = owned
    notify_settings.JOB_RUNNER = ""
    notify_settings.NOTIFY_MAX_ATTEMPTS, notify_settings.NOTIFY_DISABLE_AFTER = 1, 2
    receiver.script = [500, 200, 500]
    hook = webhooks.add(task, receiver.url, ["round_opened"])
    for number in (1, 2, 3):
        deliver_all(events.emit(task, "round_opened", {"round": number}))
    hook.refresh_from_db()
    assert hook.active and hook.consecutive_failures == 1


def test_a_server_that_is_down_or_too_slow_is_a_failed_try_with_its_reason(owned, receiver, notify_settings):
    task, _ = owned
    notify_settings.JOB_RUNNER = ""
    notify_settings.NOTIFY_MAX_ATTEMPTS = 1
    notify_settings.NOTIFY_TIMEOUT_SECONDS = 0.5
    receiver.delay = 2.0
    slow = webhooks.add(task, receiver.url, ["round_opened"])
    from tests.notify.conftest import free_port

    down = webhooks.add(task, f"http://127.0.0.1:{free_port()}/nobody", ["round_opened"])
    event = events.emit(task, "round_opened", {"round": 1})
    deliver_all(event)
    slow_try = Attempt.objects.get(delivery__webhook=slow)
    assert slow_try.status_code is None and "no answer within 0.5 s" in slow_try.error
    assert slow_try.duration_ms < 1900
    down_try = Attempt.objects.get(delivery__webhook=down)
    assert down_try.status_code is None and down_try.error.startswith("could not connect")


def test_redirects_are_not_followed(owned, receiver, notify_settings):
    task, _ = owned
    notify_settings.JOB_RUNNER = ""
    notify_settings.NOTIFY_MAX_ATTEMPTS = 1
    receiver.script = [302]
    receiver.redirect_to = "http://169.254.169.254/latest/meta-data/"
    webhooks.add(task, receiver.url, ["round_opened"])
    deliver_all(events.emit(task, "round_opened", {"round": 1}))
    (attempt,) = Attempt.objects.all()
    assert attempt.status_code == 302 and "not followed" in attempt.error
    assert len(receiver.requests) == 1


def test_private_addresses_are_refused_unless_the_operator_allows_them(owned, receiver, notify_settings):
    task, _ = owned
    notify_settings.JOB_RUNNER = ""
    notify_settings.NOTIFY_ALLOW_PRIVATE = False
    for url in ("http://127.0.0.1:9/x", "http://[::1]/x", "http://169.254.169.254/latest", "http://10.0.0.7/x",
                "http://2130706433/x"):
        with pytest.raises(InvalidInput, match="public addresses only"):
            webhooks.add(task, url, ["round_opened"])
    # a name is judged by what it resolves to, when the connection is made: localhost is refused then
    notify_settings.NOTIFY_MAX_ATTEMPTS = 1
    hook = webhooks.add(task, receiver.url.replace("127.0.0.1", "localhost"), ["round_opened"])
    deliver_all(events.emit(task, "round_opened", {"round": 1}))
    attempt = Attempt.objects.get(delivery__webhook=hook)
    assert attempt.error.startswith("refused: localhost resolves to") and "loopback" in attempt.error
    assert receiver.requests == []


@pytest.mark.parametrize("url, message", [
    ("", "give the address"), ("ftp://example.org/x", "must start with https://"),
    ("https://user:pw@example.org/x", "user name or password"), ("https:///nohost", "must start with https://"),
    ("https://example.org:99999/x", "not a valid address"), ("https://" + "a" * 600 + ".org", "at most 500"),
])
def test_bad_addresses_are_refused_with_a_reason(owned, url, message):
    with pytest.raises(InvalidInput, match=message):
        webhooks.add(owned[0], url, ["round_opened"])


def test_events_must_be_known_and_at_least_one(owned):
    with pytest.raises(InvalidInput, match="unknown event"):
        webhooks.add(owned[0], "https://hooks.example.org/in", ["round_opened", "everything"])
    with pytest.raises(InvalidInput, match="at least one"):
        webhooks.add(owned[0], "https://hooks.example.org/in", [])
    with pytest.raises(InvalidInput, match="unknown event"):
        webhooks.add(owned[0], "https://hooks.example.org/in", ["test"])  # a test event is sent by its button


def test_at_most_ten_webhooks_per_task(owned):
    for n in range(webhooks.MAX_WEBHOOKS_PER_TASK):
        webhooks.add(owned[0], f"https://hooks.example.org/{n}", ["round_opened"])
    with pytest.raises(Conflict, match="delete one first"):
        webhooks.add(owned[0], "https://hooks.example.org/last", ["round_opened"])


def test_the_sweep_sends_what_was_never_queued_and_leaves_what_is_not_due(owned, receiver, notify_settings):
    task, _ = owned
    notify_settings.JOB_RUNNER = ""  # the on-commit job never starts: as if the broker had been down
    hook = webhooks.add(task, receiver.url, ["round_opened"])
    event = events.emit(task, "round_opened", {"round": 1})
    delivery = event.deliveries.get()
    assert jobs.sweep() == 0  # not yet past the grace period: its own job may still be on its way
    Delivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - timedelta(seconds=jobs.SWEEP_GRACE_SECONDS + 1))
    notify_settings.JOB_RUNNER = "inline"
    assert jobs.sweep() == 1
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.DONE and receiver.verified(hook.secret, receiver.requests[0])
    assert jobs.sweep() == 0  # done: never sent twice


def test_a_claimed_delivery_is_not_sent_twice(owned, receiver, notify_settings):
    task, _ = owned
    notify_settings.JOB_RUNNER = ""
    webhooks.add(task, receiver.url, ["round_opened"])
    delivery = events.emit(task, "round_opened", {"round": 1}).deliveries.get()
    assert webhooks.claim(Delivery, delivery.pk)  # another job is trying it right now
    assert webhooks.attempt(delivery.pk).state == "busy"
    assert receiver.requests == []


def test_the_inline_runner_tries_once_and_leaves_the_retry_to_its_time(owned, receiver, notify_settings):
    task, _ = owned
    receiver.script = [500, 200]
    webhooks.add(task, receiver.url, ["round_opened"])
    delivery = events.emit(task, "round_opened", {"round": 1}).deliveries.get()  # inline: sent in emit
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.PENDING and delivery.attempts == 1
    assert delivery.next_attempt_at > timezone.now() - timedelta(seconds=1)
    assert len(receiver.requests) == 1
