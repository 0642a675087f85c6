"""Gold items: mixed unannounced into the queue; a careless validator's accuracy falls, their queue stops,
their votes stop counting, and the owner sees them."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Example
from tasks import roles
from tests.crowd.conftest import set_crowd
from tests.factories import ExampleFactory, UserFactory
from validation import gold, queue
from validation.models import GoldAnswer, Validation

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(crowd_task):
    owner = UserFactory(username="gold-owner")
    crowd_task.owners.add(owner)
    set_crowd(crowd_task, gold_rate=1.0, gold_min_answers=3, gold_min_accuracy=0.7)
    rnd = crowd_task.rounds.get()
    golds = []
    for n in range(3):  # verified by the crowd earlier: the right answer is "correct"
        example = ExampleFactory(round=rnd, consensus=Example.Consensus.VERIFIED, validated_label="positive",
                                 input={"text": f"gold {n}"})
        golds.append(gold.mark(example, by=owner))
    real = [ExampleFactory(round=rnd, input={"text": f"real {n}"}) for n in range(3)]
    careless = UserFactory(username="careless")
    roles.grant(careless, roles.VALIDATOR)
    return {"owner": owner, "golds": golds, "real": real, "careless": careless, "task": crowd_task}


def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def next_item(client, slug):
    return client.post(f"/api/tasks/{slug}/validation/next/").json()


def vote(client, example_id, verdict, label=None):
    body = {"verdict": verdict, **({"label": label} if label else {})}
    return client.post(f"/api/examples/{example_id}/validations/", body, content_type="application/json")


def test_gold_items_lower_a_careless_validators_accuracy_and_stop_their_queue(setup):
    task, client = setup["task"], api(setup["careless"])
    # At gold_rate 1 every item is gold while real items wait and gold is left.
    gold_ids = {g.example_id for g in setup["golds"]}
    served = []
    for _ in range(3):
        item = next_item(client, task.slug)["item"]
        served.append(item["id"])
        assert set(item) >= {"id", "input", "writer_label", "validate_url"}  # looks like any other item
        assert vote(client, item["id"], "incorrect", "negative").status_code == 201  # wrong: they were right
    assert set(served) == gold_ids
    standing = gold.standing(task, setup["careless"])
    assert (standing.answered, standing.correct, standing.accuracy, standing.blocked) == (3, 0, 0.0, True)
    empty = next_item(client, task.slug)
    assert empty["item"] is None and empty["reason"] == queue.LOW_ACCURACY
    refused = vote(client, setup["real"][0].pk, "correct")
    assert refused.status_code == 403 and refused.json()["code"] == "low_accuracy"
    owner_page = api(setup["owner"]).get(f"/tasks/{task.slug}/console/crowd/")
    assert b'data-user="careless"' in owner_page.content and b"below the threshold" in owner_page.content


def test_a_careful_validator_keeps_receiving_items(setup):
    task = setup["task"]
    careful = UserFactory(username="careful")
    roles.grant(careful, roles.VALIDATOR)
    client = api(careful)
    for _ in range(3):
        item = next_item(client, task.slug)["item"]
        assert vote(client, item["id"], "correct").status_code == 201
    assert gold.standing(task, careful).accuracy == 1.0
    item = next_item(client, task.slug)["item"]
    assert item is not None and item["id"] in {e.pk for e in setup["real"]}


def test_answers_on_gold_never_move_the_consensus(setup):
    task, client = setup["task"], api(setup["careless"])
    item = next_item(client, task.slug)["item"]
    vote(client, item["id"], "incorrect", "negative")
    example = Example.objects.get(pk=item["id"])
    assert example.consensus == Example.Consensus.VERIFIED
    assert not Validation.objects.filter(example=example).exists()
    assert GoldAnswer.objects.get(validator=setup["careless"]).correct is False


def test_a_blocked_validators_votes_stop_counting(setup):
    task, client = setup["task"], api(setup["careless"])
    set_crowd(task, gold_rate=0.0)
    real = setup["real"][0]
    task.config = {**task.config, "validation": {"quorum": 1}}
    task.save()
    vote(client, real.pk, "correct")
    real.refresh_from_db()
    assert real.consensus == Example.Consensus.VERIFIED  # decided by their one vote
    set_crowd(task, gold_rate=1.0)
    for _ in range(3):
        item = next_item(client, task.slug)["item"]
        vote(client, item["id"], "incorrect", "negative")
    real.refresh_from_db()
    assert real.consensus == Example.Consensus.UNVALIDATED  # open again
    assert Validation.objects.get(example=real).counted is False


def test_gold_is_not_served_when_nothing_real_is_waiting(setup):
    task = setup["task"]
    Example.objects.filter(pk__in=[e.pk for e in setup["real"]]).update(consensus=Example.Consensus.VERIFIED)
    from validation.queue import sync_queue

    sync_queue(task)
    assert next_item(api(setup["careless"]), task.slug)["item"] is None


def test_only_a_decided_example_in_the_queues_scope_can_be_gold(setup):
    from dynabench_site.errors import Conflict

    rnd = setup["task"].rounds.get()
    with pytest.raises(Conflict, match="verified or rejected"):
        gold.mark(ExampleFactory(round=rnd))
    with pytest.raises(Conflict, match="stand out"):
        gold.mark(ExampleFactory(round=rnd, fooled=False, consensus=Example.Consensus.VERIFIED))


def test_the_owner_marks_gold_from_a_page(setup):
    task = setup["task"]
    rejected = ExampleFactory(round=task.rounds.get(), consensus=Example.Consensus.REJECTED, validated_label="negative")
    client = api(setup["owner"])
    assert str(rejected.pk).encode() in client.get(f"/tasks/{task.slug}/console/crowd/gold/").content
    client.post(f"/tasks/{task.slug}/console/crowd/gold/mark/", {"example": rejected.pk, "action": "mark"})
    item = gold.active_gold(rejected)
    assert (item.verdict, item.label) == ("incorrect", "negative")
    client.post(f"/tasks/{task.slug}/console/crowd/gold/mark/", {"example": rejected.pk, "action": "unmark"})
    assert gold.active_gold(rejected) is None


def test_a_gold_item_not_served_is_just_a_decided_example(setup):
    client = api(setup["careless"])
    probe = vote(client, setup["golds"][0].example_id, "correct")
    assert probe.status_code == 409 and probe.json()["code"] == "decided"
    assert not GoldAnswer.objects.exists()
