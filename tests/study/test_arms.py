"""Randomised arms, the assignment (study.arms): balanced permuted blocks and seeded simple random, recorded once and
never changed, reproducible from the seed, safe under concurrent joins; and the owner's arms (pages and API) with
their validation."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection
from rest_framework.test import APIClient

from study import arms
from study.models import Arm, Participant, Study
from tasks import roles
from tests.factories import RoundFactory, TaskFactory, UserFactory


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_study(slug="study-task", mode=Study.Assignment.BALANCED, seed=7, weights=(1, 1)):
    task = TaskFactory(slug=slug, kind="sentiment")
    RoundFactory(task=task, number=1)
    Study.objects.create(task=task, enabled=True, seed=seed, assignment=mode)
    made = [Arm.objects.create(task=task, key=f"arm{i}", name=f"Arm {i}", weight=w, position=i)
            for i, w in enumerate(weights)]
    return task, made


def people(n, prefix="p"):
    out = []
    for i in range(n):
        user = UserFactory(username=f"{prefix}{i}")
        roles.grant(user, roles.ANNOTATOR)
        out.append(user)
    return out


def assign_all(task, users):
    return [arms.assign(task, user) for user in users]


@pytest.mark.django_db
def test_balanced_assignment_stays_within_a_block_at_every_step():
    task, (a, b) = make_study()
    counts = Counter()
    block = (a.weight + b.weight) * arms.BLOCK_REPEATS
    for n, participant in enumerate(assign_all(task, people(40))):
        assert participant.sequence == n and participant.assigned_at is not None
        counts[participant.arm_id] += 1
        assert abs(counts[a.pk] - counts[b.pk]) <= block // 2, (n, counts)  # at most half a block apart
        if (n + 1) % block == 0:
            assert counts[a.pk] == counts[b.pk]  # every whole block is exactly balanced
    assert counts[a.pk] == counts[b.pk] == 20
    stored = Counter(Participant.objects.filter(task=task).values_list("arm_id", flat=True))
    assert stored == counts


@pytest.mark.django_db
def test_weights_two_to_one_are_honoured():
    task, (a, b) = make_study(weights=(2, 1))
    result = Counter(p.arm_id for p in assign_all(task, people(36)))  # six blocks of 6
    assert result == {a.pk: 24, b.pk: 12}


@pytest.mark.django_db
def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    task, made = make_study(seed=11)
    first = [p.arm.key for p in assign_all(task, people(24))]
    other, made2 = make_study(slug="again", seed=11)
    again = [p.arm.key for p in assign_all(other, people(24, prefix="q"))]
    assert first == again  # same seed, same keys' order: the same schedule
    assert first == [next(a.key for a in made if a.pk == pk) for pk in arms.schedule(made, 11, 24)]
    assert arms.schedule(made, 11, 24) != arms.schedule(made, 12, 24)


@pytest.mark.django_db
def test_an_assigned_arm_is_never_changed_by_later_edits():
    task, (a, b) = make_study()
    first = assign_all(task, people(6))
    recorded = {p.user_id: (p.arm_id, p.sequence) for p in first}
    arms.update_arm(a, {"name": "Renamed", "weight": 5, "active": False})  # edits allowed on a used arm
    Arm.objects.create(task=task, key="late", name="Late arm")
    for participant in assign_all(task, [p.user for p in first]):  # asked again: nothing moves
        assert (participant.arm_id, participant.sequence) == recorded[participant.user_id]
    later = assign_all(task, people(4, prefix="late"))
    assert all(p.arm_id != a.pk for p in later)  # the deactivated arm takes nobody new
    assert [p.sequence for p in later] == [6, 7, 8, 9]


@pytest.mark.django_db
def test_random_mode_is_seeded_per_place():
    task, made = make_study(mode=Study.Assignment.RANDOM, seed=3)
    drawn = [p.arm_id for p in assign_all(task, people(30))]
    study = Study.objects.get(task=task)
    assert drawn == [arms.pick(study, made, n).pk for n in range(30)]  # reproducible from (seed, place)
    assert len(set(drawn)) == 2


@pytest.mark.django_db
def test_who_is_not_assigned():
    task, _ = make_study()
    owner = UserFactory(username="owner")
    task.owners.add(owner)
    assert arms.assign(task, owner).arm is None  # owners set the study up
    quitter, = people(1, prefix="quit")
    Participant.objects.create(task=task, user=quitter, eligible=False)
    assert arms.assign(task, quitter).arm is None
    Study.objects.filter(task=task).update(enabled=False)
    off, = people(1, prefix="off")
    participant = arms.assign(task, off)
    assert participant.pk and participant.arm is None  # recorded, not assigned: the study is off
    assert arms.arm_of(task, off) is None


@pytest.mark.django_db(transaction=True)
def test_people_joining_at_once_get_distinct_places():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    task, _ = make_study(slug="race")
    users = people(8, prefix="r")
    start, errors = threading.Barrier(len(users)), []

    def join(user):
        try:
            start.wait()
            arms.assign(task, user)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=join, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    rows = list(Participant.objects.filter(task=task).order_by("sequence"))
    assert [p.sequence for p in rows] == list(range(8))
    assert Counter(p.arm_id for p in rows).most_common(1)[0][1] == 4  # two whole blocks: balanced


@pytest.mark.django_db(transaction=True)
def test_one_person_joining_twice_at_once_keeps_one_arm():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    task, _ = make_study(slug="twice")
    user, = people(1, prefix="twice")
    start, seen = threading.Barrier(4), []

    def join():
        try:
            start.wait()
            seen.append(arms.assign(task, user).arm_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=join) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen)) == 1 and Participant.objects.filter(task=task).count() == 1
    assert Participant.objects.get(task=task).sequence == 0


# --- the owner's API --------------------------------------------------------------------------------


@pytest.fixture
def owner_api(db):
    task, made = make_study(slug="owned")
    owner = UserFactory(username="boss")
    task.owners.add(owner)
    client = APIClient()
    client.force_authenticate(owner)
    return client, task, made


def test_the_owner_lists_adds_and_changes_arms(owner_api):
    client, task, made = owner_api
    listed = client.get(f"/api/tasks/{task.slug}/arms/")
    assert listed.status_code == 200 and [a["key"] for a in listed.data["arms"]] == ["arm0", "arm1"]
    assert listed.data["assignment"] == {"enabled": True, "seed": 7, "assignment": "balanced",
                                         "block_repeats": arms.BLOCK_REPEATS, "assigned": 0}
    added = client.post(f"/api/tasks/{task.slug}/arms/", {"key": "no-model", "name": "Standard collection",
                                                          "model_in_loop": False, "weight": 2}, format="json")
    assert added.status_code == 201 and added.data["model_in_loop"] is False and added.data["weight"] == 2
    changed = client.patch(f"/api/tasks/{task.slug}/arms/{added.data['id']}/", {"assistant": False}, format="json")
    assert changed.status_code == 200 and changed.data["assistant"] is False


@pytest.mark.parametrize("body, field", [
    ({"name": "No key"}, "key"),
    ({"key": "arm0", "name": "Twice"}, "key"),
    ({"key": "bad key!", "name": "Spaces"}, "key"),
    ({"key": "w", "name": "Heavy", "weight": 99}, "weight"),
    ({"key": "w", "name": "Odd", "weight": "lots"}, "weight"),
    ({"key": "w", "name": "Flag", "assistant": "perhaps"}, "assistant"),
    ({"key": "w", "name": "Gone", "ensemble": 999999}, "ensemble"),
    ({"key": "w", "name": "Mystery", "colour": "red"}, "colour"),
])
def test_invalid_arms_are_refused_with_the_field_named(owner_api, body, field):
    client, task, _ = owner_api
    response = client.post(f"/api/tasks/{task.slug}/arms/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]


def test_an_ensemble_of_another_task_is_refused(owner_api):
    from modelzoo.models import Ensemble

    client, task, _ = owner_api
    other = TaskFactory(slug="other-task")
    foreign = Ensemble.objects.create(round=RoundFactory(task=other, number=1), strategy="mean", active=False)
    response = client.post(f"/api/tasks/{task.slug}/arms/", {"key": "x", "name": "X", "ensemble": foreign.pk},
                           format="json")
    assert response.status_code == 400 and "not an ensemble of this task" in response.json()["errors"]["ensemble"][0]


def test_a_used_arm_keeps_its_condition_and_cannot_be_deleted(owner_api):
    client, task, (a, b) = owner_api
    user, = people(1, prefix="u")
    arm_id = arms.assign(task, user).arm_id
    url = f"/api/tasks/{task.slug}/arms/{arm_id}/"
    refused = client.patch(url, {"model_in_loop": False}, format="json")
    assert refused.status_code == 409 and "fixed" in refused.json()["detail"]
    assert client.patch(url, {"name": "Still fine", "active": False}, format="json").status_code == 200
    gone = client.delete(url)
    assert gone.status_code == 409 and "deactivate" in gone.json()["detail"]
    fresh = client.post(f"/api/tasks/{task.slug}/arms/", {"key": "spare", "name": "Spare"}, format="json")
    assert client.delete(f"/api/tasks/{task.slug}/arms/{fresh.data['id']}/").status_code == 204


def test_the_assignment_settings_are_fixed_once_anyone_is_assigned(owner_api):
    """study.arms.update_settings: what the study's settings (the study console and its API) call."""
    from dynabench_site.errors import Conflict, InvalidInput

    _, task, _ = owner_api
    assert arms.update_settings(task, {"seed": 42, "assignment": "random"}).seed == 42
    with pytest.raises(InvalidInput) as bad:
        arms.update_settings(task, {"assignment": "alphabetical"})
    assert bad.value.field == "assignment"
    user, = people(1, prefix="s")
    arms.assign(task, user)
    with pytest.raises(Conflict, match="fixed"):
        arms.update_settings(task, {"seed": 43})
    assert arms.update_settings(task, {"seed": 42}).seed == 42  # unchanged: never refused


def test_a_participant_learns_what_their_page_does_not_their_arm(owner_api):
    _, task, _ = owner_api
    user, = people(1, prefix="m")
    client = APIClient()
    client.force_authenticate(user)
    before = client.get(f"/api/tasks/{task.slug}/arms/mine/")
    assert before.status_code == 200 and before.data["assigned"] is False and before.data["in_study"] is True
    assert not Participant.objects.filter(user=user).exists()  # reading assigns nobody
    arms.assign(task, user)
    after = client.get(f"/api/tasks/{task.slug}/arms/mine/").data
    assert after["assigned"] is True and set(after) == {"in_study", "assigned", "assistant", "model_in_loop"}
    assert client.get(f"/api/tasks/{task.slug}/arms/").status_code == 403  # the list is the owner's


# --- the owner's pages ------------------------------------------------------------------------------


def test_the_owner_pages_add_change_and_refuse(owner_api, client):
    _, task, (a, _) = owner_api
    client.force_login(task.owners.get())
    page = client.get(f"/tasks/{task.slug}/console/study/arms/")
    assert page.status_code == 200 and b"arm0" in page.content
    added = client.post(f"/tasks/{task.slug}/console/study/arms/add/", {"key": "helper-off", "name": "No assistant",
                                                          "model_in_loop": "on", "weight": "1", "active": "on"})
    assert added.status_code == 302
    arm = Arm.objects.get(task=task, key="helper-off")
    assert arm.assistant is False and arm.model_in_loop is True
    refused = client.post(f"/tasks/{task.slug}/console/study/arms/add/", {"key": "helper-off", "name": "Again"}, follow=True)
    assert b"already has an arm" in refused.content
    edit = client.get(f"/tasks/{task.slug}/console/study/arms/{arm.pk}/")
    assert edit.status_code == 200
    saved = client.post(f"/tasks/{task.slug}/console/study/arms/{arm.pk}/", {"name": "Renamed", "weight": "3", "active": "on"})
    assert saved.status_code == 302
    arm.refresh_from_db()
    assert (arm.name, arm.weight, arm.assistant, arm.model_in_loop) == ("Renamed", 3, False, False)
    assert client.post(f"/tasks/{task.slug}/console/study/arms/{arm.pk}/delete/").status_code == 302
    assert not Arm.objects.filter(pk=arm.pk).exists()
