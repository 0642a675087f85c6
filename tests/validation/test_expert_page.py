"""The expert page lists disputed and flagged examples, with filters, and resolves them."""

import pytest
from django.test import Client

from tests.factories import ExampleFactory, RoundFactory


@pytest.fixture
def expert_client(personas) -> Client:
    client = Client()
    client.force_login(personas.expert)
    return client


@pytest.fixture
def review(open_round, task):
    later = RoundFactory(task=task, number=2, status="draft")
    return {
        "disputed": ExampleFactory(round=open_round, consensus="disputed"),
        "flagged": ExampleFactory(round=open_round, consensus="flagged"),
        "later": ExampleFactory(round=later, consensus="disputed"),
        "verified": ExampleFactory(round=open_round, consensus="verified"),
    }


def listed(client, task, query: str = "") -> set[int]:
    response = client.get(f"/tasks/{task.slug}/expert/{query}")
    return {ex.pk for ex in response.context["examples"]}


def test_lists_disputed_and_flagged_examples(expert_client, task, review):
    assert listed(expert_client, task) == {review["disputed"].pk, review["flagged"].pk, review["later"].pk}


def test_filters_by_flags_disagreements_and_round(expert_client, task, review):
    assert listed(expert_client, task, "?show=flags") == {review["flagged"].pk}
    assert listed(expert_client, task, "?show=disagreements") == {review["disputed"].pk, review["later"].pk}
    assert listed(expert_client, task, "?show=disagreements&round=2") == {review["later"].pk}


def test_resolved_examples_leave_the_list_unless_asked_for(expert_client, task, review):
    url = f"/tasks/{task.slug}/expert/{review['flagged'].pk}/resolve/"
    response = expert_client.post(url, {"verdict": "flagged", "reason": "duplicate", "next": "?show=flags"})
    assert response.status_code == 302 and response.url.endswith("?show=flags")
    assert listed(expert_client, task, "?show=flags") == set()
    assert listed(expert_client, task, "?show=flags&resolved=1") == {review["flagged"].pk}


def test_bad_resolution_says_why(expert_client, task, review):
    url = f"/tasks/{task.slug}/expert/{review['disputed'].pk}/resolve/"
    response = expert_client.post(url, {"verdict": "flagged", "reason": ""}, follow=True)
    assert "reason" in response.content.decode() and "not resolved" in response.content.decode()
    review["disputed"].refresh_from_db()
    assert review["disputed"].consensus == "disputed"
