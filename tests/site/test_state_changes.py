"""State changes only on POST: leasing a queue item, serving a context and re-queueing a verdict are POSTs, so a
GET (a link, a prefetch, a read-only token) can never do them."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts import tokens
from tests.factories import ContextFactory, ExampleFactory
from validation.models import Lease

pytestmark = pytest.mark.django_db


def token_client(user, access: str) -> APIClient:
    _, key = tokens.issue(user, "script", access, counted=False)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def test_a_read_only_token_cannot_lease_a_queue_item(personas, open_round):
    example = ExampleFactory(round=open_round)
    reader = token_client(personas.validator, "read")
    refused = reader.post("/api/tasks/sentiment/validation/next/")
    assert refused.status_code == 403 and "read-only token may only read" in refused.json()["detail"]
    assert reader.get("/api/tasks/sentiment/validation/next/").status_code == 405
    assert not Lease.objects.exists()
    leased = token_client(personas.validator, "full").post("/api/tasks/sentiment/validation/next/")
    assert leased.status_code == 200 and leased.json()["item"]["id"] == example.pk
    assert Lease.objects.filter(validator=personas.validator).count() == 1


@pytest.mark.parametrize("path", ["/api/tasks/sentiment/validation/next/", "/api/tasks/sentiment/contexts/next/",
                                  "/api/examples/{example}/score/"])
def test_state_changing_endpoints_refuse_get_with_a_message(path, personas, open_round, client_for):
    example = ExampleFactory(round=open_round, author=personas.annotator)
    context = ContextFactory(task=open_round.task, round=open_round)
    for persona in ("annotator", "validator", "owner"):
        response = client_for(persona).get(path.format(example=example.pk))
        assert response.status_code in (403, 405), (persona, response.status_code)
        if response.status_code == 405:
            assert response.json()["detail"] == 'Method "GET" not allowed.'
    context.refresh_from_db()
    assert context.times_used == 0 and not Lease.objects.exists()
