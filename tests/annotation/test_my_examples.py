"""My examples (page and API): each example's verdict, validation outcome, corrected label and flag reasons;
a writer appeals a rejection to an expert once, and the appeal lands in the expert queue."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Example
from tests.factories import ExampleFactory, RoundFactory, TaskFactory, UserFactory, ValidationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def mine(writer):
    task = TaskFactory(slug="mine-task", kind="sentiment")
    rnd = RoundFactory(task=task)
    rejected = ExampleFactory(round=rnd, author=writer, consensus="rejected", validated_label="negative",
                              input={"text": "rejected one"})
    ValidationFactory(example=rejected, verdict="incorrect", label="negative", reason="sarcasm: it is negative")
    flagged = ExampleFactory(round=rnd, author=writer, flagged=True, flag_reason="typo", input={"text": "flagged one"})
    ValidationFactory(example=flagged, verdict="flagged", reason="not English")
    pending = ExampleFactory(round=rnd, author=writer, scoring_state="pending", fooled=None, input={"text": "pending"})
    ExampleFactory(round=rnd, input={"text": "someone else's"})
    return {"task": task, "rejected": rejected, "flagged": flagged, "pending": pending}


def test_the_api_lists_only_my_examples_with_their_outcome(writer_api, mine):
    data = writer_api.get("/api/me/examples/").json()
    rows = {r["id"]: r for r in data["results"]}
    assert set(rows) == {mine["rejected"].pk, mine["flagged"].pk, mine["pending"].pk}
    rejected = rows[mine["rejected"].pk]
    assert rejected["consensus"] == "rejected" and rejected["corrected_label"] == "negative"
    assert rejected["flag_reasons"]["validators"] == ["sarcasm: it is negative"]
    assert rejected["fooled"] is True and rejected["model_prediction"] == "negative"
    assert rejected["appeal"]["allowed"] is True and rejected["links"]["appeal"].endswith("/appeal/")
    flagged = rows[mine["flagged"].pk]
    assert flagged["flag_reasons"] == {"yours": "typo", "validators": ["not English"]}
    assert flagged["appeal"]["allowed"] is False  # not decided: nothing to appeal
    assert rows[mine["pending"].pk]["scoring_state"] == "pending"


def test_the_api_filters_by_task(writer_api, mine):
    other = TaskFactory(slug="other-mine")
    assert writer_api.get(f"/api/me/examples/?task={other.slug}").json()["results"] == []
    assert writer_api.get(f"/api/me/examples/?task={mine['task'].slug}").json()["count"] == 3


def test_the_page_shows_the_outcome_and_the_appeal_form(writer, mine):
    client = Client()
    client.force_login(writer)
    html = client.get("/me/examples/").content.decode()
    assert "rejected one" in html and "someone else" not in html
    assert "corrected label: <strong>negative</strong>" in html and "sarcasm: it is negative" in html
    assert html.count('class="appeal-form"') == 1


def test_a_writer_appeals_a_rejection_once_and_it_reaches_the_experts(writer, writer_api, mine):
    url = f"/api/examples/{mine['rejected'].pk}/appeal/"
    assert writer_api.post(url, {"reason": "it is sarcastic, but positive"}, format="json").status_code == 200
    again = writer_api.post(url, {"reason": "please"}, format="json")
    assert again.status_code == 409 and "already appealed" in again.json()["detail"]

    expert = UserFactory(username="the-expert")
    mine["task"].owners.add(expert)
    client = Client()
    client.force_login(expert)
    queue = client.get(f"/tasks/{mine['task'].slug}/expert/?show=appeals")
    assert [e.pk for e in queue.context["examples"]] == [mine["rejected"].pk]
    assert b"it is sarcastic, but positive" in queue.content
    client.post(f"/tasks/{mine['task'].slug}/expert/{mine['rejected'].pk}/resolve/", {"verdict": "correct"})
    example = Example.objects.get(pk=mine["rejected"].pk)
    assert example.consensus == "verified" and example.appeal_resolved_at is not None
    assert client.get(f"/tasks/{mine['task'].slug}/expert/?show=appeals").context["examples"] == []
    row = writer_api.get("/api/me/examples/").json()["results"]
    assert next(r for r in row if r["id"] == example.pk)["appeal"]["resolved_at"] is not None


def test_an_undecided_example_cannot_be_appealed(writer_api, mine):
    response = writer_api.post(f"/api/examples/{mine['pending'].pk}/appeal/", {"reason": "x"}, format="json")
    assert response.status_code == 409 and "only a rejected or flagged" in response.json()["detail"]


def test_the_appeal_form_on_the_page_works(writer, mine):
    client = Client()
    client.force_login(writer)
    page = client.post(f"/me/examples/{mine['rejected'].pk}/appeal/", {"reason": "look again", "next": "/me/examples/"},
                       follow=True)
    assert b"sent to an expert" in page.content and b"waiting for an expert" in page.content
