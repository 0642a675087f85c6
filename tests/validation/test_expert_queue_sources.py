"""What reaches the expert queue: disputed consensus, writer flags, validator flags and writers' appeals."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import ExampleFactory, ValidationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def expert_client(personas) -> Client:
    client = Client()
    client.force_login(personas.expert)
    return client


def listed(client, task, query: str = "") -> set[int]:
    return {ex.pk for ex in client.get(f"/tasks/{task.slug}/expert/{query}").context["examples"]}


def test_a_writers_flag_appears_in_the_expert_queue(expert_client, task, open_round, personas, client_for):
    example = ExampleFactory(round=open_round, author=personas.annotator)
    response = client_for("annotator").post(f"/api/examples/{example.pk}/flag/", {"reason": "I made a typo"}, format="json")
    assert response.status_code == 200
    assert listed(expert_client, task) == {example.pk}
    assert listed(expert_client, task, "?show=flags") == {example.pk}
    page = expert_client.get(f"/tasks/{task.slug}/expert/").content.decode()
    assert "flagged by the writer" in page and "I made a typo" in page


def test_one_validators_flag_appears_before_any_consensus(expert_client, task, open_round, client_for):
    example = ExampleFactory(round=open_round)
    vote = client_for("validator").post(f"/api/examples/{example.pk}/validations/",
                                        {"verdict": "flagged", "reason": "not a sentence"}, format="json")
    assert vote.status_code == 201 and vote.json()["consensus"] == "unvalidated"
    assert listed(expert_client, task, "?show=flags") == {example.pk}
    assert "flagged by a validator" in expert_client.get(f"/tasks/{task.slug}/expert/").content.decode()


def test_flags_leave_the_queue_once_an_expert_decides(expert_client, task, open_round):
    example = ExampleFactory(round=open_round, flagged=True, flag_reason="unsure")
    expert_client.post(f"/tasks/{task.slug}/expert/{example.pk}/resolve/", {"verdict": "correct"})
    assert listed(expert_client, task) == set()
    assert listed(expert_client, task, "?resolved=1") == {example.pk}


def test_a_withdrawn_flag_vote_does_not_send_an_example(expert_client, task, open_round):
    example = ExampleFactory(round=open_round)
    ValidationFactory(example=example, verdict="flagged", reason="spam", counted=False, excluded_reason="suspended")
    assert listed(expert_client, task) == set()


def test_the_expert_page_shows_the_guidelines(expert_client, task, personas):
    from tasks import guidelines

    guidelines.publish(task, "## Worked example\n\nSarcasm is negative.", by=personas.owner)
    page = expert_client.get(f"/tasks/{task.slug}/expert/").content.decode()
    assert "Worked example" in page and "Guidelines (version 1)" in page
