"""A near-duplicate of the writer's own recent example (normalised text, same context) is refused."""

from __future__ import annotations

import pytest

from annotation.duplicates import normalise
from annotation.models import Example
from tests.annotation.conftest import sentiment_body
from tests.factories import ContextFactory, UserFactory

pytestmark = pytest.mark.django_db


def post(client, task, body):
    return client.post(f"/api/tasks/{task.slug}/examples/", body, format="json")


def test_a_duplicate_submission_is_refused(writer_api, sentiment):
    task, _, context = sentiment
    first = post(writer_api, task, sentiment_body(context, input={"text": "What a wonderful, slow evening."}))
    again = post(writer_api, task, sentiment_body(context, input={"text": "  what a WONDERFUL slow evening!! "},
                                                  target="negative"))
    assert first.status_code in (201, 202)
    assert again.status_code == 409
    assert again.data["code"] == "duplicate" and again.data["duplicate_of"] == first.data["id"]
    assert "already wrote this example" in again.data["detail"]
    assert Example.objects.count() == 1


def test_the_same_text_on_another_context_or_by_another_writer_is_new(writer_api, sentiment, api):
    from tasks import roles

    task, round, context = sentiment
    body = sentiment_body(context)
    assert post(writer_api, task, body).status_code in (201, 202)
    other_context = ContextFactory(task=task, round=round, payload={"prompt": "Another prompt."})
    assert post(writer_api, task, sentiment_body(other_context)).status_code in (201, 202)
    colleague = UserFactory(username="colleague")
    roles.grant(colleague, roles.ANNOTATOR)
    api.force_authenticate(colleague)
    assert post(api, task, body).status_code in (201, 202)
    assert Example.objects.count() == 3


def test_a_retracted_example_may_be_written_again(writer_api, sentiment):
    task, _, context = sentiment
    first = post(writer_api, task, sentiment_body(context))
    writer_api.post(f"/api/examples/{first.data['id']}/retract/")
    assert post(writer_api, task, sentiment_body(context)).status_code in (201, 202)


def test_a_retry_with_the_same_key_is_a_replay_not_a_duplicate(writer_api, sentiment):
    task, _, context = sentiment
    post(writer_api, task, sentiment_body(context, idempotency_key="k"))
    assert post(writer_api, task, sentiment_body(context, idempotency_key="k")).status_code == 200


def test_normalisation_ignores_case_punctuation_and_spacing_only():
    assert normalise("Great   food!!") == normalise("great food") == "great food"
    assert normalise("great food, slow service") != normalise("great food")
    assert normalise("ｆｕｌｌ width") == "full width"  # NFKC
