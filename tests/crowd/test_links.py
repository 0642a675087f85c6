"""External worker links: signed, expiring, carrying the worker id and assignment id; they sign a worker in
once per assignment; a tampered, expired or closed link is refused with a page that says so; the worker
gets a completion code at the end. Identity never comes from a header."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import Account
from crowd import links
from crowd.models import Assignment, WorkerBatch
from tasks import roles
from tests.crowd.conftest import set_crowd
from tests.factories import ExampleFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(crowd_task):
    owner = UserFactory(username="study-owner")
    crowd_task.owners.add(owner)
    return links.create_batch(crowd_task, owner, name="pilot", source="prolific", hours=24, examples_required=2,
                              workers="5f1a2b3c4d,ASSIGN-1\n6e7f8a9b0c,ASSIGN-2\n")


def link_of(batch: WorkerBatch, worker: str = "5f1a2b3c4d") -> str:
    return links.link_path(batch.assignments.get(worker_id=worker))


def whoami(client) -> str | None:
    user_id = client.session.get("_auth_user_id")
    return None if user_id is None else Account.objects.get(user_id=user_id).external_worker_id


def test_a_signed_link_signs_a_worker_in_once_per_assignment(batch):
    url = link_of(batch)
    worker = Client()
    landing = worker.get(url)
    assert landing.status_code == 200 and b"Start" in landing.content
    assert whoami(worker) is None  # looking at the link signs nobody in (link scanners cannot spend it)
    started = worker.post(url)
    assignment = batch.assignments.get(worker_id="5f1a2b3c4d")
    assert started.status_code == 302 and started.url == f"/assignments/{assignment.pk}/"
    assert whoami(worker) == "5f1a2b3c4d"
    user = Account.objects.get(external_worker_id="5f1a2b3c4d").user
    assert not user.has_usable_password()
    assert roles.has_role(user, roles.ANNOTATOR, batch.task)  # a crowd writer on that task ...
    assert not roles.has_role(user, roles.VALIDATOR, batch.task)  # ... and nothing more

    again = Client().post(url)
    assert again.status_code == 409 and b"already been used" in again.content
    assert Client().get(url).status_code == 200  # the landing page says so too, without signing in


def test_the_same_worker_keeps_one_account_across_assignments(batch, crowd_task):
    second = links.create_batch(crowd_task, None, name="again", source="prolific", hours=1, examples_required=1,
                                workers="5f1a2b3c4d,ASSIGN-9")
    Client().post(link_of(batch))
    Client().post(link_of(second))
    assert Account.objects.filter(external_worker_id="5f1a2b3c4d").count() == 1
    assert len({a.user_id for a in Assignment.objects.filter(worker_id="5f1a2b3c4d")}) == 1


def test_a_tampered_link_is_refused(batch):
    url = link_of(batch)
    token = url.split("/")[-2]
    other = link_of(batch, "6e7f8a9b0c").split("/")[-2]
    for bad in (token[:-2] + ("AA" if not token.endswith("AA") else "BB"), token[:20], other.split(":")[0] + ":" +
                token.split(":", 1)[1]):
        client = Client()
        response = client.post(f"/go/{bad}/")
        assert response.status_code == 400 and b"changed or cut short" in response.content
        assert whoami(client) is None
    assert not Assignment.objects.filter(followed_at__isnull=False).exists()


def test_an_expired_link_is_refused(batch):
    url = link_of(batch)
    WorkerBatch.objects.filter(pk=batch.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    response = Client().get(url)
    assert response.status_code == 410 and b"expired" in response.content
    assert Client().post(url).status_code == 410


def test_a_link_expires_with_its_signed_date_even_if_the_batch_is_extended(batch):
    url = link_of(batch)
    WorkerBatch.objects.filter(pk=batch.pk).update(expires_at=timezone.now() + timedelta(days=30))
    with pytest.raises(links.LinkRefused) as refused:
        links.read(url.split("/")[-2], now=timezone.now() + timedelta(days=2))
    assert refused.value.reason == "expired"


def test_a_closed_batchs_links_are_refused(batch):
    owner = Client()
    owner.force_login(batch.task.owners.get())
    owner.post(f"/console/batches/{batch.pk}/close/")
    assert Client().post(link_of(batch)).status_code == 410


def test_identity_never_comes_from_a_header_or_a_parameter(batch):
    client = Client(HTTP_X_WORKER_ID="5f1a2b3c4d", HTTP_X_PROLIFIC_PID="5f1a2b3c4d")
    assert client.get("/me/examples/?PROLIFIC_PID=5f1a2b3c4d").status_code == 302  # to the login page
    assert whoami(client) is None and not Account.objects.exists()


def test_the_completion_code_comes_after_the_required_examples(batch):
    worker = Client()
    worker.post(link_of(batch))
    assignment = batch.assignments.get(worker_id="5f1a2b3c4d")
    page = worker.get(f"/assignments/{assignment.pk}/")
    assert b"0</span> of 2" in page.content and assignment.completion_code.encode() not in page.content
    early = worker.post(f"/assignments/{assignment.pk}/finish/", follow=True)
    assert b"write 2 more" in early.content
    rnd = batch.task.rounds.get()
    for n in range(2):
        ExampleFactory(round=rnd, author=Assignment.objects.get(pk=assignment.pk).user, input={"text": f"ex {n}"})
    done = worker.post(f"/assignments/{assignment.pk}/finish/", follow=True)
    assert assignment.completion_code.encode() in done.content
    assert Assignment.objects.get(pk=assignment.pk).completed_at is not None


def test_another_account_cannot_see_an_assignment(batch):
    Client().post(link_of(batch))
    assignment = batch.assignments.get(worker_id="5f1a2b3c4d")
    nosy = Client()
    nosy.force_login(UserFactory(username="nosy"))
    assert nosy.get(f"/assignments/{assignment.pk}/").status_code == 404


def test_a_task_that_asks_writers_for_a_quiz_asks_link_workers_too(batch):
    set_crowd(batch.task, writers_need_quiz=True)
    worker = Client()
    worker.post(link_of(batch))
    user = Account.objects.get(external_worker_id="5f1a2b3c4d").user
    assert not roles.has_role(user, roles.ANNOTATOR, batch.task)


def test_bad_worker_lists_are_refused_with_the_line(crowd_task):
    from dynabench_site.errors import InvalidInput

    with pytest.raises(InvalidInput, match="line 2"):
        links.create_batch(crowd_task, None, name="x", source="mturk", hours=1, examples_required=1,
                           workers="GOOD1\nbad id with spaces\n")


def test_the_owner_gets_the_links_as_a_page_and_a_csv(batch):
    owner = Client()
    owner.force_login(batch.task.owners.get())
    page = owner.get(f"/console/batches/{batch.pk}/")
    assert page.status_code == 200 and b"5f1a2b3c4d" in page.content and b"/go/" in page.content
    csv = owner.get(f"/console/batches/{batch.pk}/links.csv")
    assert csv["Content-Type"].startswith("text/csv")
    assert csv.content.decode().splitlines()[0] == "worker_id,assignment_id,link"
    assert len(csv.content.decode().splitlines()) == 3
