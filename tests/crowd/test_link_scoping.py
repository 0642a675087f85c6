"""Worker links sign into an account scoped by task: worker ids are public (usernames such as
`prolific-<id>`), so an owner who lists another task's worker id in a batch of their own must land on a fresh
account, never on that worker's (its assignments, completion codes and API tokens). The same worker on two
batches of one task keeps one account; a link never signs into a staff, owner or password account."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from accounts import services as accounts
from accounts import tokens
from crowd import links
from crowd.models import Assignment, WorkerAccount
from tests.factories import ContextFactory, ExampleFactory, RoundFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

WORKER = "5f1a2b3c4d"


def batch_on(task, owner, workers: str, name: str = "batch"):
    return links.create_batch(task, owner, name=name, source="prolific", hours=24, examples_required=1,
                              workers=workers)


def follow(batch, worker: str = WORKER) -> tuple[Client, Assignment]:
    client = Client()
    assignment = batch.assignments.get(worker_id=worker)
    response = client.post(links.link_path(assignment))
    assert response.status_code == 302, response.content[:300]
    return client, Assignment.objects.select_related("user").get(pk=assignment.pk)


def signed_in(client) -> int | None:
    user_id = client.session.get("_auth_user_id")
    return None if user_id is None else int(user_id)


@pytest.fixture
def victim(crowd_task):
    """A worker who followed a link of the crowd task, wrote their example, got the code and made a token."""
    owner = UserFactory(username="victims-owner")
    crowd_task.owners.add(owner)
    client, assignment = follow(batch_on(crowd_task, owner, f"{WORKER},VICTIM-1"))
    ExampleFactory(round=crowd_task.rounds.get(), author=assignment.user, input={"text": "the victim's example"})
    code = links.complete(assignment)
    _, key = tokens.issue(assignment.user, "victim's script")
    return {"client": client, "assignment": assignment, "user": assignment.user, "code": code, "key": key}


@pytest.fixture
def attackers_task(db):
    task = TaskFactory(slug="other-owners-task", kind="sentiment")
    rnd = RoundFactory(task=task, number=1)
    ContextFactory(task=task, round=rnd, payload={"prompt": "Anything."})
    owner = UserFactory(username="other-owner")
    task.owners.add(owner)
    return task, owner


def test_an_owner_listing_another_tasks_worker_id_lands_on_a_fresh_account(victim, attackers_task):
    task, owner = attackers_task
    crafted = batch_on(task, owner, f"{WORKER},CRAFTED-1", name="crafted")
    attacker, assignment = follow(crafted)

    assert signed_in(attacker) == assignment.user.pk != victim["user"].pk
    assert assignment.user.username != victim["user"].username
    # Nothing of the victim's is reachable from that session: assignment, completion code, tokens, examples.
    assert attacker.get(f"/assignments/{victim['assignment'].pk}/").status_code == 404
    assert victim["code"].encode() not in attacker.get(f"/assignments/{assignment.pk}/").content
    tokens_page = attacker.get("/me/tokens/").content.decode()
    assert "victim&#x27;s script" not in tokens_page and "victim's script" not in tokens_page
    assert attacker.get("/api/tokens/").json() == []
    assert b"the victim" not in attacker.get("/me/examples/").content
    # The victim's account is untouched and still theirs.
    victim_account = WorkerAccount.objects.get(user=victim["user"])
    assert victim_account.task_id == victim["assignment"].batch.task_id
    assert signed_in(victim["client"]) == victim["user"].pk


def test_the_same_worker_on_two_owners_tasks_has_two_linked_accounts(victim, attackers_task):
    task, owner = attackers_task
    _, second = follow(batch_on(task, owner, f"{WORKER},STUDY-2"))
    assert second.user.pk != victim["user"].pk
    assert WorkerAccount.objects.filter(worker_id=WORKER).count() == 2
    # Both are the same person for the sybil rules: neither validates what the other wrote.
    assert accounts.are_linked(second.user, victim["user"].pk)


def test_the_same_worker_on_two_batches_of_one_task_keeps_one_account(victim, crowd_task):
    _, again = follow(batch_on(crowd_task, None, f"{WORKER},VICTIM-2", name="second wave"))
    assert again.user.pk == victim["user"].pk
    assert WorkerAccount.objects.filter(worker_id=WORKER).count() == 1


@pytest.mark.parametrize("promote", ["password", "staff", "superuser", "owner", "inactive"])
def test_a_link_never_signs_into_an_account_that_is_more_than_a_worker(victim, crowd_task, promote):
    user = User.objects.get(pk=victim["user"].pk)
    if promote == "password":
        user.set_password("a-long-passphrase-42")
    elif promote == "inactive":
        user.is_active = False
    elif promote == "owner":
        TaskFactory(slug="owned-by-the-worker").owners.add(user)
    else:
        setattr(user, f"is_{promote}", True)
    user.save()
    batch = batch_on(crowd_task, None, f"{WORKER},VICTIM-3", name="later")
    assignment = batch.assignments.get()
    client = Client()
    refused = client.post(links.link_path(assignment))
    assert refused.status_code == 403 and b"no longer a worker account" in refused.content
    assert signed_in(client) is None
    assert Assignment.objects.get(pk=assignment.pk).followed_at is None  # the link is not spent


def test_a_worker_id_that_is_someone_elses_username_never_reaches_that_account(crowd_task):
    """`prolific-<id>` is only a username: an existing account of that name is never signed into."""
    existing = UserFactory(username=f"prolific-{WORKER}")
    _, assignment = follow(batch_on(crowd_task, None, f"{WORKER},NAME-1"))
    assert assignment.user.pk != existing.pk
    assert assignment.user.username.startswith(f"prolific-{WORKER}-")
