"""Sybil resistance: sign-ups limited per address; nobody validates what an account linked to theirs wrote
(same sign-up address or external worker id); suspension withdraws an account's votes."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from accounts.services import record_external
from annotation.models import Example
from tasks import roles
from tests.crowd.conftest import SIGNUP_PASSWORD, set_crowd, sign_up
from tests.factories import ExampleFactory, UserFactory
from validation.models import Validation

pytestmark = pytest.mark.django_db


def make_validators(task, *users) -> None:
    for user in users:
        roles.grant_on_task(user, task, roles.VALIDATOR, "owner")


def vote(client, example, verdict="correct"):
    return client.post(f"/api/examples/{example.pk}/validations/", {"verdict": verdict}, content_type="application/json")


def test_three_accounts_from_one_address_cannot_verify_each_others_examples(crowd_task):
    clients = {name: sign_up(name, ip="203.0.113.9") for name in ("sock1", "sock2", "sock3")}
    people = {u.username: u for u in User.objects.filter(username__in=clients)}
    make_validators(crowd_task, *people.values())
    example = ExampleFactory(round=crowd_task.rounds.get(), author=people["sock1"])  # a fooling example

    for name in ("sock2", "sock3"):
        empty = clients[name].post(f"/api/tasks/{crowd_task.slug}/validation/next/").json()
        assert empty["item"] is None and empty["reason"] == "only_own"
        refused = vote(clients[name], example)
        assert refused.status_code == 403 and refused.json()["code"] == "linked_account"
    example.refresh_from_db()
    assert example.consensus == Example.Consensus.UNVALIDATED and not Validation.objects.exists()

    stranger = sign_up("stranger", ip="198.51.100.44")
    make_validators(crowd_task, User.objects.get(username="stranger"))
    assert stranger.post(f"/api/tasks/{crowd_task.slug}/validation/next/").json()["item"]["id"] == example.pk
    assert vote(stranger, example).status_code == 201


def test_the_owner_sees_linked_accounts_without_their_addresses(crowd_task):
    for name in ("twin1", "twin2"):
        sign_up(name, ip="203.0.113.10")
    owner = UserFactory(username="watchful")
    crowd_task.owners.add(owner)
    for name in ("twin1", "twin2"):
        ExampleFactory(round=crowd_task.rounds.get(), author=User.objects.get(username=name))
    client = Client()
    client.force_login(owner)
    page = client.get(f"/tasks/{crowd_task.slug}/console/crowd/people/").content.decode()
    assert 'data-user="twin1"' in page and "twin2" in page
    assert "203.0.113.10" not in page


def test_accounts_sharing_an_external_worker_id_are_linked_even_with_the_address_rule_off(crowd_task):
    set_crowd(crowd_task, same_ip_rule=False)
    writer, validator = UserFactory(username="w-prolific"), UserFactory(username="w-mturk")
    record_external(writer, "prolific", "WORKER42")
    record_external(validator, "mturk", "WORKER42")
    make_validators(crowd_task, validator)
    example = ExampleFactory(round=crowd_task.rounds.get(), author=writer)
    client = Client()
    client.force_login(validator)
    assert vote(client, example).json()["code"] == "linked_account"


def test_the_address_rule_can_be_turned_off_for_a_crowd_behind_one_address(crowd_task):
    set_crowd(crowd_task, same_ip_rule=False)
    sign_up("lab1", ip="192.0.2.5")
    lab2 = sign_up("lab2", ip="192.0.2.5")
    make_validators(crowd_task, User.objects.get(username="lab2"))
    example = ExampleFactory(round=crowd_task.rounds.get(), author=User.objects.get(username="lab1"))
    assert vote(lab2, example).status_code == 201


def test_signups_are_limited_per_address(db, settings):
    settings.SIGNUP_RATE = "2/hour"
    for name in ("first", "second"):
        sign_up(name, ip="203.0.113.77")
    client = Client(REMOTE_ADDR="203.0.113.77")
    refused = client.post("/accounts/signup/", {"username": "third", "email": "t@example.org",
                                                "password1": SIGNUP_PASSWORD, "password2": SIGNUP_PASSWORD})
    assert refused.status_code == 429 and b"Too many accounts" in refused.content
    assert not User.objects.filter(username="third").exists()
    sign_up("elsewhere", ip="203.0.113.78")  # another address is not affected


def test_a_mistyped_signup_does_not_use_the_allowance(db, settings):
    settings.SIGNUP_RATE = "1/hour"
    client = Client(REMOTE_ADDR="203.0.113.80")
    bad = client.post("/accounts/signup/", {"username": "typo", "password1": SIGNUP_PASSWORD, "password2": "other"})
    assert bad.status_code == 400
    sign_up("typo", ip="203.0.113.80")


def test_suspending_an_account_withdraws_its_votes_and_reopens_what_they_decided(crowd_task):
    crowd_task.config = {**crowd_task.config, "validation": {"quorum": 2}}
    crowd_task.save()
    owner = UserFactory(username="boss")
    crowd_task.owners.add(owner)
    sock, honest = UserFactory(username="sock"), UserFactory(username="honest")
    make_validators(crowd_task, sock, honest)
    roles.grant(sock, roles.ANNOTATOR)
    rnd = crowd_task.rounds.get()
    decided, pending = ExampleFactory(round=rnd), ExampleFactory(round=rnd)
    for user, example in [(sock, decided), (honest, decided), (sock, pending)]:
        client = Client()
        client.force_login(user)
        assert vote(client, example).status_code == 201
    decided.refresh_from_db()
    assert decided.consensus == Example.Consensus.VERIFIED

    boss = Client()
    boss.force_login(owner)
    page = boss.post(f"/tasks/{crowd_task.slug}/console/crowd/suspend/",
                     {"username": "sock", "reason": "one of three accounts of one person", "action": "suspend"},
                     follow=True)
    assert b"suspended" in page.content
    decided.refresh_from_db()
    assert decided.consensus == Example.Consensus.UNVALIDATED  # open again: one counted vote of two
    assert set(Validation.objects.filter(validator=sock).values_list("counted", "excluded_reason")) == {(False, "suspended")}
    assert not roles.has_role(User.objects.get(username="sock"), roles.VALIDATOR, crowd_task)
    sock_client = Client()
    sock_client.force_login(sock)
    assert sock_client.get(f"/tasks/{crowd_task.slug}/validate/").status_code == 403
    assert sock_client.get(f"/tasks/{crowd_task.slug}/create/").status_code == 403

    boss.post(f"/tasks/{crowd_task.slug}/console/crowd/suspend/", {"username": "sock", "action": "lift"})
    assert roles.has_role(User.objects.get(username="sock"), roles.VALIDATOR, crowd_task)


def test_an_owner_cannot_be_suspended_from_their_task(crowd_task):
    owner, other_owner = UserFactory(username="o1"), UserFactory(username="o2")
    crowd_task.owners.add(owner, other_owner)
    client = Client()
    client.force_login(owner)
    page = client.post(f"/tasks/{crowd_task.slug}/console/crowd/suspend/",
                       {"username": "o2", "reason": "x", "action": "suspend"}, follow=True)
    assert b"cannot be suspended" in page.content
