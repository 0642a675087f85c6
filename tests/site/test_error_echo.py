"""What a 400 answer echoes of the request is bounded: a field name a client made a megabyte long comes back cut
to MAX_NAME characters (not twice whole, as the key of `errors` and in `detail`), a long message is cut, and
a body with hundreds of unknown fields lists MAX_FIELDS of them and says how many more there were."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from dynabench_site.api import MAX_DETAIL, MAX_FIELDS, MAX_NAME
from tasks import roles
from tests.factories import ContextFactory, ExampleFactory, RoundFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene():
    task = TaskFactory(slug="sentiment", kind="sentiment")
    round_ = RoundFactory(task=task, number=1)
    context = ContextFactory(task=task, round=round_)
    writer = UserFactory(username="writer")
    roles.grant(writer, roles.ANNOTATOR)
    example = ExampleFactory(round=round_, context=context)
    return task, context, writer, example


def signed_in(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def post_raw(client: APIClient, path: str, body: dict):
    return client.post(path, json.dumps(body), content_type="application/json")


def test_a_megabyte_field_name_is_not_echoed_whole_on_the_submission_route(scene):
    task, context, writer, _ = scene
    name = "x" * 1_000_000
    body = {"context_id": context.pk, "input": {"text": "A fine evening."}, "target": "positive", name: 1}
    response = post_raw(signed_in(writer), reverse("api-example-create", args=[task.slug]), body)
    assert response.status_code == 400
    assert len(response.content) < 4_000  # was 2 MB: the name as the key of `errors` and again in `detail`
    errors = response.json()["errors"]
    (shown,) = errors
    assert len(shown) == MAX_NAME and shown == "x" * (MAX_NAME - 1) + "…"
    assert "is not an accepted field" in errors[shown][0]
    assert response.json()["detail"].startswith("x" * (MAX_NAME - 1) + "…: is not an accepted field")


def test_a_long_field_name_on_the_small_vote_route_is_answered_small(scene):
    _, _, _, example = scene
    voter = UserFactory(username="voter")
    roles.grant(voter, roles.VALIDATOR)
    name = "y" * 15_000  # the vote route takes 16 KB bodies
    response = post_raw(signed_in(voter), reverse("api-example-validations", args=[example.pk]),
                        {"verdict": "correct", name: True})
    assert response.status_code == 400
    assert len(response.content) < 2_000  # was 30 KB
    assert list(response.json()["errors"]) == ["y" * (MAX_NAME - 1) + "…"]


def test_hundreds_of_unknown_fields_are_counted_not_listed(scene):
    task, context, writer, _ = scene
    body = {"context_id": context.pk, "input": {"text": "A fine evening."}, "target": "positive",
            **{f"field_{i:03d}": i for i in range(300)}}
    response = post_raw(signed_in(writer), reverse("api-example-create", args=[task.slug]), body)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert len(errors) == MAX_FIELDS + 1
    assert errors["more_fields"] == [f"{300 - MAX_FIELDS} more fields were refused and are not listed"]
    assert "field_000" in errors and "field_299" not in errors
    assert len(response.json()["detail"]) <= MAX_DETAIL


def test_a_long_unknown_input_field_named_in_a_domain_error_is_cut(scene):
    """The kind's own check of `input` names the unknown field in its message: the message is cut too."""
    task, context, writer, _ = scene
    name = "z" * 200_000
    body = {"context_id": context.pk, "input": {"text": "A fine evening.", name: "x"}, "target": "positive"}
    response = post_raw(signed_in(writer), reverse("api-example-create", args=[task.slug]), body)
    assert response.status_code == 400
    assert len(response.content) < 4_000
    assert response.json()["errors"]["input"][0].startswith("unknown field(s) zzz")
