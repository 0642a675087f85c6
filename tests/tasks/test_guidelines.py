"""Guidelines per task: Markdown with worked examples, versioned; shown on the write, validate and expert
pages; a worker acknowledges a new version before they submit or vote again."""

from __future__ import annotations

import pytest
from django.test import Client

from tasks import guidelines
from tasks.models import Guidelines
from tests.factories import ExampleFactory

pytestmark = pytest.mark.django_db


def page(client, url: str) -> str:
    return client.get(url).content.decode()


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_owners_publish_versions_from_a_page(task, personas):
    owner = logged_in(personas.owner)
    url = f"/tasks/{task.slug}/console/guidelines/"
    assert owner.post(url, {"text": "# Version one\n\n| text | label |\n|---|---|\n| a | b |"}).status_code == 302
    assert owner.post(url, {"text": "# Version one\n\n| text | label |\n|---|---|\n| a | b |"}).status_code == 302
    assert owner.post(url, {"text": "# Version two"}).status_code == 302
    assert list(Guidelines.objects.filter(task=task).values_list("version", flat=True)) == [2, 1]
    shown = page(Client(), f"/tasks/{task.slug}/guidelines/")
    assert "<h1>Version two</h1>" in shown and 'data-version="2"' in shown


def test_a_writer_acknowledges_before_submitting(task, open_round, personas, client_for):
    from tests.factories import ContextFactory

    context = ContextFactory(task=task, round=open_round)
    guidelines.publish(task, "# Write well", by=personas.owner)
    body = {"context_id": context.pk, "input": {"text": "A fine sentence."}, "target": "positive"}
    refused = client_for("annotator").post(f"/api/tasks/{task.slug}/examples/", body, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "guidelines"
    assert "guidelines-ack-form" in page(logged_in(personas.annotator), f"/tasks/{task.slug}/create/")
    guidelines.acknowledge(personas.annotator, task, 1)
    assert client_for("annotator").post(f"/api/tasks/{task.slug}/examples/", body, format="json").status_code in (201, 202)


def test_a_new_version_must_be_acknowledged_before_submitting_or_voting(task, open_round, personas, client_for):
    guidelines.publish(task, "# Read me", by=personas.owner)
    example = ExampleFactory(round=open_round)
    vote = client_for("validator").post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"}, format="json")
    assert vote.status_code == 409 and vote.json()["code"] == "guidelines"
    assert vote.json()["guidelines_url"] == f"/tasks/{task.slug}/guidelines/"
    validator = logged_in(personas.validator)
    assert "guidelines-ack-form" in page(validator, f"/tasks/{task.slug}/validate/")
    back = validator.post(f"/tasks/{task.slug}/guidelines/acknowledge/", {"version": "1", "next": f"/tasks/{task.slug}/validate/"})
    assert back.status_code == 302 and back.url == f"/tasks/{task.slug}/validate/"
    assert client_for("validator").post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"},
                                        format="json").status_code == 201
    guidelines.publish(task, "# Read me again: something changed", by=personas.owner)
    again = ExampleFactory(round=open_round)
    assert client_for("validator").post(f"/api/examples/{again.pk}/validations/", {"verdict": "correct"},
                                        format="json").status_code == 409


def test_a_stale_acknowledgement_is_refused(task, personas):
    guidelines.publish(task, "# One", by=personas.owner)
    guidelines.publish(task, "# Two", by=personas.owner)
    response = logged_in(personas.validator).post(f"/tasks/{task.slug}/guidelines/acknowledge/", {"version": "1"},
                                                  follow=True)
    assert b"not the current guidelines" in response.content


def test_owners_are_never_asked(task, open_round, personas, client_for):
    guidelines.publish(task, "# Rules", by=personas.owner)
    example = ExampleFactory(round=open_round)
    assert client_for("owner").post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"},
                                    format="json").status_code == 201


def test_the_validate_page_shows_the_instructions_and_guidelines(task, personas):
    task.config = {**task.config, "instructions": "Judge the **label**, not the style."}
    task.save()
    guidelines.publish(task, "## Worked examples\n\n*Oh great* is negative.", by=personas.owner)
    html = page(logged_in(personas.validator), f"/tasks/{task.slug}/validate/")
    assert "<strong>label</strong>" in html and "Worked examples" in html


def test_a_task_without_guidelines_asks_nothing(task, open_round, client_for):
    example = ExampleFactory(round=open_round)
    assert client_for("validator").post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"},
                                        format="json").status_code == 201


@pytest.mark.parametrize("persona", ["owner", "annotator", "validator", "expert", "researcher", "outsider", "admin",
                                     "anonymous"])
def test_guidelines_pages_matrix(task, personas, persona):
    guidelines.publish(task, "# Rules", by=personas.owner)
    client = Client()
    if (user := personas.get(persona)) is not None:
        client.force_login(user)
    assert client.get(f"/tasks/{task.slug}/guidelines/").status_code == 200
    ack = client.post(f"/tasks/{task.slug}/guidelines/acknowledge/", {"version": "1"})
    assert ack.status_code == 302
    assert ("/accounts/login/" in ack.url) is (persona == "anonymous")
    edit = client.get(f"/tasks/{task.slug}/console/guidelines/")
    assert edit.status_code == (200 if persona in {"owner", "admin"} else 302 if persona == "anonymous" else 403)
    publish = client.post(f"/tasks/{task.slug}/console/guidelines/", {"text": f"# By {persona}"})
    assert publish.status_code == (302 if persona in {"owner", "admin", "anonymous"} else 403)
    assert guidelines.current(task).version == (2 if persona in {"owner", "admin"} else 1)
