"""Submission rules: saved before scoring, idempotent resubmission, throttling, the writer's actions."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tests.annotation.conftest import make_task, sentiment_body
from tests.factories import ExampleFactory, UserFactory

pytestmark = pytest.mark.django_db


def post(client, task, body, query: str = ""):
    return client.post(f"/api/tasks/{task.slug}/examples/{query}", body, format="json")


def test_the_same_idempotency_key_returns_the_first_example(writer_api, sentiment):
    task, _, context = sentiment
    first = post(writer_api, task, sentiment_body(context, idempotency_key="k-1"))
    again = post(writer_api, task, sentiment_body(context, idempotency_key="k-1", input={"text": "different"}))
    assert first.status_code in (201, 202)
    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.data["id"] == first.data["id"]
    assert again.data["input"] == {"text": "What a wonderful, slow evening."}
    assert Example.objects.count() == 1


def test_a_replay_returns_the_first_example_even_after_the_round_closed(writer_api, sentiment):
    task, round, context = sentiment
    first = post(writer_api, task, sentiment_body(context, idempotency_key="k-2"))
    round.status = round.Status.CLOSED
    round.save()
    assert post(writer_api, task, sentiment_body(context, idempotency_key="k-2")).data["id"] == first.data["id"]


def test_idempotency_keys_are_per_author(writer_api, sentiment, client):
    from rest_framework.test import APIClient

    from tasks import roles

    task, _, context = sentiment
    other = UserFactory(username="other-writer")
    roles.grant(other, roles.ANNOTATOR)
    other_api = APIClient()
    other_api.force_authenticate(other)
    a = post(writer_api, task, sentiment_body(context, idempotency_key="shared"))
    b = post(other_api, task, sentiment_body(context, idempotency_key="shared"))
    assert a.status_code in (201, 202) and b.status_code in (201, 202)
    assert a.data["id"] != b.data["id"]


def test_without_a_key_each_submission_is_a_new_example(writer_api, sentiment):
    """Each different text is a new example (the same text again is a duplicate: tests/annotation/test_duplicates.py)."""
    task, _, context = sentiment
    post(writer_api, task, sentiment_body(context))
    post(writer_api, task, sentiment_body(context, input={"text": "A second, different sentence."}))
    assert Example.objects.count() == 2


def test_the_example_is_saved_pending_before_any_model_is_called(writer_api, sentiment):
    # Without a committed transaction no job has run: the example exists, unscored, attempts 0.
    task, _, context = sentiment
    response = post(writer_api, task, sentiment_body(context, time_spent_ms=1234))
    example = Example.objects.get(pk=response.data["id"])
    assert example.scoring_state == "pending" and example.scoring_attempts == 0 and example.fooled is None
    assert example.author.username == "writer" and example.time_spent_ms == 1234
    assert response.status_code == 202 and response.data["scoring_state"] == "pending"
    assert response["Location"] == f"/api/examples/{example.pk}/"


def test_submissions_over_the_task_rate_get_429_with_retry_after(writer_api):
    task, _, context = make_task("sentiment", slug="slow-task", config={"submission_rate": "2/min"})
    assert post(writer_api, task, sentiment_body(context)).status_code == 202
    assert post(writer_api, task, sentiment_body(context, input={"text": "Another one."})).status_code == 202
    refused = post(writer_api, task, sentiment_body(context, input={"text": "And a third."}))
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert Example.objects.count() == 2


def test_the_rate_counts_per_task(writer_api):
    slow, _, slow_context = make_task("sentiment", slug="slow-task", config={"submission_rate": "1/hour"})
    fast, _, fast_context = make_task("sentiment", slug="fast-task", config={"submission_rate": "100/min"})
    assert post(writer_api, slow, sentiment_body(slow_context)).status_code == 202
    assert post(writer_api, slow, sentiment_body(slow_context)).status_code == 429
    assert post(writer_api, fast, sentiment_body(fast_context)).status_code == 202


def test_retract_stops_the_example_counting(writer_api, writer, sentiment):
    _, round, _ = sentiment
    example = ExampleFactory(round=round, author=writer, fooled=True)
    response = writer_api.post(f"/api/examples/{example.pk}/retract/")
    assert response.status_code == 200 and response.data["retracted"] is True
    stats = writer_api.get("/api/me/stats/").data
    assert stats["collected"] == 0 and stats["retracted"] == 1


def test_a_validated_example_can_no_longer_be_retracted(writer_api, writer, sentiment):
    _, round, _ = sentiment
    example = ExampleFactory(round=round, author=writer, consensus=Example.Consensus.VERIFIED)
    response = writer_api.post(f"/api/examples/{example.pk}/retract/")
    assert response.status_code == 409 and "retracted" in response.data["errors"]


def test_flag_keeps_the_reason_and_needs_one(writer_api, writer, sentiment):
    _, round, _ = sentiment
    example = ExampleFactory(round=round, author=writer)
    empty = writer_api.post(f"/api/examples/{example.pk}/flag/", {"reason": "  "}, format="json")
    assert empty.status_code == 400 and "reason" in empty.data["errors"]
    response = writer_api.post(f"/api/examples/{example.pk}/flag/", {"reason": "I chose the wrong label"}, format="json")
    assert response.data["flagged"] is True and response.data["flag_reason"] == "I chose the wrong label"


def test_writer_explanation_is_kept_with_the_example(writer_api, writer, sentiment):
    _, round, _ = sentiment
    example = ExampleFactory(round=round, author=writer)
    url = f"/api/examples/{example.pk}/explanation/"
    bad = writer_api.post(url, {"writer_explanation": "x" * 2001}, format="json")
    assert bad.status_code == 400 and "writer_explanation" in bad.data["errors"]
    writer_api.post(url, {"writer_explanation": "The model ignores sarcasm."}, format="json")
    example.refresh_from_db()
    assert example.writer_explanation == "The model ignores sarcasm."


def test_client_cannot_change_the_verdict_through_the_actions(writer_api, writer, sentiment):
    _, round, _ = sentiment
    example = ExampleFactory(round=round, author=writer, fooled=False)
    response = writer_api.post(f"/api/examples/{example.pk}/flag/", {"reason": "x", "fooled": True}, format="json")
    assert response.status_code == 400 and "fooled" in response.data["errors"]
    example.refresh_from_db()
    assert example.fooled is False and example.flagged is False


def test_my_stats_are_the_writers_own_figures(writer_api, writer, sentiment):
    task, round, _ = sentiment
    ExampleFactory(round=round, author=writer, fooled=True, consensus=Example.Consensus.VERIFIED)
    ExampleFactory(round=round, author=writer, fooled=False)
    ExampleFactory(round=round, author=writer, fooled=True, retracted=True)
    ExampleFactory(round=round, fooled=True)  # someone else's
    stats = writer_api.get(f"/api/me/stats/?task={task.slug}").data
    assert stats["collected"] == 2 and stats["fooled"] == 1 and stats["verified_fooled"] == 1
    assert stats["mer"] == 0.5 and stats["retracted"] == 1
