"""The create flow under hostile or unlucky requests: deep JSON, odd targets, a cache outage, read-only tokens,
idempotency keys reused across tasks."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Example
from exports.models import ReadOnlyToken
from tests.annotation.conftest import make_task, qa_body, sentiment_body

pytestmark = pytest.mark.django_db


def post(client, task, body, **extra):
    return client.post(f"/api/tasks/{task.slug}/examples/", body, format="json", **extra)


def test_a_deeply_nested_json_body_is_a_400_that_says_so(writer_api, sentiment):
    task, _, _ = sentiment
    body = '{"input": ' + "[" * 5000 + "]" * 5000 + ', "target": "positive"}'
    response = writer_api.post(f"/api/tasks/{task.slug}/examples/", body, content_type="application/json")
    assert response.status_code == 400
    assert "nests 5001 levels deep; at most 20 are accepted" in response.json()["detail"]
    assert not Example.objects.exists()


def test_a_json_body_that_is_not_json_says_so(writer_api, sentiment):
    task, _, _ = sentiment
    for body in ("{", "[NaN]", b"\xff\xfe"):
        response = writer_api.post(f"/api/tasks/{task.slug}/examples/", body, content_type="application/json")
        assert response.status_code == 400 and response.json()["detail"].startswith("JSON parse error")


def test_a_json_body_over_the_size_limit_is_a_413(writer_api, sentiment, settings):
    task, _, context = sentiment
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps(sentiment_body(context, input={"text": "x" * 2000}))
    response = writer_api.post(f"/api/tasks/{task.slug}/examples/", body, content_type="application/json")
    assert response.status_code == 413 and "too large" in response.json()["detail"]


@pytest.mark.parametrize("alternatives", ["1889", {"a": "1889"}, 1889, [1889], ["1889"] * 21])
def test_a_qa_target_whose_alternatives_are_not_a_list_of_texts_is_a_400(writer_api, qa, alternatives):
    task, _, context = qa
    body = qa_body(context)
    body["target"]["alternatives"] = alternatives
    response = post(writer_api, task, body)
    assert response.status_code == 400, response.content
    assert "target.alternatives" in response.json()["errors"]
    assert not Example.objects.exists()


def test_qa_alternatives_as_a_list_are_kept(writer_api, qa):
    task, _, context = qa
    body = qa_body(context)
    body["target"]["alternatives"] = ["in 1889"]
    assert post(writer_api, task, body).status_code in (201, 202)
    assert Example.objects.get().target["alternatives"] == ["in 1889"]


def test_the_same_idempotency_key_on_another_task_is_another_example(writer_api, sentiment):
    task, _, context = sentiment
    other, _, other_context = make_task("sentiment", slug="other-sentiment")
    first = post(writer_api, task, sentiment_body(context, idempotency_key="k-1"))
    again = post(writer_api, task, sentiment_body(context, idempotency_key="k-1"))
    elsewhere = post(writer_api, other, sentiment_body(other_context, idempotency_key="k-1"))
    assert first.status_code in (201, 202) and again.status_code == 200 and again.data["id"] == first.data["id"]
    assert elsewhere.status_code in (201, 202) and elsewhere.data["id"] != first.data["id"]
    assert elsewhere.data["task"] == "other-sentiment"
    assert Example.objects.count() == 2


def test_a_cache_outage_never_loses_a_submission(writer_api, sentiment, redis_down):
    task, _, context = sentiment
    response = post(writer_api, task, sentiment_body(context))
    assert response.status_code in (201, 202), response.content
    assert Example.objects.filter(pk=response.data["id"]).exists()


def test_reading_an_example_never_requeues_its_scoring(writer_api, sentiment, settings):
    task, _, context = sentiment
    example_id = post(writer_api, task, sentiment_body(context)).data["id"]  # no models: stays pending
    settings.SCORING_RETRY_BASE_SECONDS = 0
    Example.objects.filter(pk=example_id).update(updated_at=timezone.now() - timedelta(hours=1))  # its retry is due
    before = Example.objects.get(pk=example_id)
    assert writer_api.get(f"/api/examples/{example_id}/").data["scoring_state"] == "pending"
    after = Example.objects.get(pk=example_id)
    assert (after.scoring_attempts, after.updated_at) == (before.scoring_attempts, before.updated_at)
    assert writer_api.post(f"/api/examples/{example_id}/score/").status_code == 200
    assert Example.objects.get(pk=example_id).updated_at > before.updated_at  # the POST claimed the retry


def test_a_read_only_token_cannot_trigger_rescoring(writer, sentiment, settings):
    task, _, context = sentiment
    example = Example.objects.create(round=task.current_round, context=context, author=writer,
                                     input={"text": "a slow evening"}, target="positive")
    settings.SCORING_RETRY_BASE_SECONDS = 0
    _, raw = ReadOnlyToken.issue(writer, "script")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get(f"/api/examples/{example.pk}/").status_code == 200  # reading is what it is for
    refused = client.post(f"/api/examples/{example.pk}/score/")
    assert refused.status_code == 403 and "read-only token may only read" in refused.json()["detail"]
    assert client.post(f"/api/tasks/{task.slug}/contexts/next/").status_code == 403
    assert Example.objects.get(pk=example.pk).scoring_attempts == 0
