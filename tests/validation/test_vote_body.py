"""A vote's body is read as strictly as an example's: a field the API does not know answers 400 naming it
(a misspelt `reason` must not pass as a vote without one, nor a client-set `consensus` be silently ignored)."""

from __future__ import annotations

import pytest

from validation.models import Validation

pytestmark = pytest.mark.django_db


def vote(client, example, body):
    return client.post(f"/api/examples/{example.pk}/validations/", body, format="json")


@pytest.mark.parametrize("field", ["reasons", "consensus", "weight"])
def test_an_unknown_field_in_a_vote_is_refused_naming_it(client_for, example, field):
    response = vote(client_for("validator"), example, {"verdict": "flagged", "reason": "not English", field: "x"})
    assert response.status_code == 400
    assert field in response.data["errors"] and field in response.data["detail"]
    assert not Validation.objects.exists()


def test_a_vote_with_only_known_fields_is_still_recorded(client_for, example):
    response = vote(client_for("validator"), example, {"verdict": "incorrect", "label": "negative", "reason": "sad"})
    assert response.status_code == 201, response.data


def test_a_vote_body_that_is_not_an_object_is_refused(client_for, example):
    response = vote(client_for("validator"), example, ["correct"])
    assert response.status_code == 400 and not Validation.objects.exists()
