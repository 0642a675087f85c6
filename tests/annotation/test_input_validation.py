"""Every bad submission is a 4xx whose message names the field and the problem; nothing is saved."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tasks.models import Round
from tests.annotation.conftest import QA_PASSAGE, make_task, nli_body, qa_body, sentiment_body
from tests.factories import ContextFactory, RoundFactory

pytestmark = pytest.mark.django_db


def post(client, task, body):
    return client.post(f"/api/tasks/{task.slug}/examples/", body, format="json")


def assert_refused(response, field: str, words: str, status: int = 400) -> None:
    assert response.status_code == status, response.content
    assert field in response.data["errors"], response.data
    assert field in response.data["detail"]
    assert words in response.data["detail"]
    assert not Example.objects.exists()


@pytest.mark.parametrize(
    ("text", "words"),
    [("", "must not be empty"), ("   \n ", "must not be empty"), ("x" * 501, "the limit is 500"),
     ("bell\x07 rings", "control character U+0007"), (42, "must be a string")],
)
def test_bad_text_is_refused_naming_input_text(writer_api, sentiment, text, words):
    task, _, context = sentiment
    response = post(writer_api, task, sentiment_body(context, input={"text": text}))
    assert_refused(response, "input.text", words)


def test_unknown_label_is_refused_naming_target(writer_api, sentiment):
    task, _, context = sentiment
    assert_refused(post(writer_api, task, sentiment_body(context, target="ecstatic")), "target", "unknown label 'ecstatic'")


def test_unknown_input_field_is_refused(writer_api, sentiment):
    task, _, context = sentiment
    response = post(writer_api, task, sentiment_body(context, input={"text": "fine", "mood": "x"}))
    assert_refused(response, "input", "unknown field(s) mood")


def test_missing_input_field_is_refused(writer_api, nli):
    task, _, context = nli
    assert_refused(post(writer_api, task, nli_body(context, input={})), "input.hypothesis", "is required")


def test_qa_answer_that_does_not_match_the_passage_is_refused(writer_api, qa):
    task, _, context = qa
    body = qa_body(context, target={"text": "1889", "start": 3})
    assert_refused(post(writer_api, task, body), "target.text", "does not match the passage at character 3")


def test_qa_answer_with_a_negative_start_is_refused(writer_api, qa):
    task, _, context = qa
    body = qa_body(context, target={"text": "1889", "start": -1})
    assert_refused(post(writer_api, task, body), "target.start", "non-negative integer")


def test_qa_answer_must_be_an_object(writer_api, qa):
    task, _, context = qa
    assert_refused(post(writer_api, task, qa_body(context, target="1889")), "target", "must be an object")


def test_context_of_another_task_is_refused(writer_api, sentiment):
    task, _, _ = sentiment
    _, _, foreign = make_task("sentiment", slug="other-sentiment")
    response = post(writer_api, task, sentiment_body(foreign))
    assert_refused(response, "context_id", "does not belong to task 'sentiment-task'")


def test_context_of_another_round_is_refused(writer_api, sentiment):
    task, round, _ = sentiment
    Round.objects.filter(pk=round.pk).update(status=Round.Status.CLOSED)
    RoundFactory(task=task, number=2)
    old = ContextFactory(task=task, round=round)
    response = post(writer_api, task, sentiment_body(old))
    assert_refused(response, "context_id", "belongs to round 1, not to the open round 2")


def test_missing_context_is_refused_when_the_model_reads_it(writer_api, nli):
    task, _, context = nli
    body = nli_body(context)
    del body["context_id"]
    assert_refused(post(writer_api, task, body), "context_id", "is required")


def test_unknown_context_id_is_refused(writer_api, qa):
    task, _, context = qa
    assert_refused(post(writer_api, task, qa_body(context, context_id=999999)), "context_id", "does not belong")


def test_closed_round_is_a_conflict(writer_api, sentiment):
    task, round, context = sentiment
    Round.objects.filter(pk=round.pk).update(status=Round.Status.CLOSED)
    response = post(writer_api, task, sentiment_body(context))
    assert_refused(response, "round", "has no open round", status=409)


def test_a_stale_round_number_is_a_conflict(writer_api, sentiment):
    task, _, context = sentiment
    response = post(writer_api, task, sentiment_body(context, round=7))
    assert_refused(response, "round", "round 7 is not open", status=409)


@pytest.mark.parametrize("field", ["fooled", "ensemble_prediction", "scoring_state", "verdict", "consensus"])
def test_client_cannot_set_verdict_fields(writer_api, sentiment, field):
    task, _, context = sentiment
    response = post(writer_api, task, sentiment_body(context, **{field: True}))
    assert_refused(response, field, "decided by the server")


def test_unknown_top_level_field_is_refused_naming_it(writer_api, sentiment):
    task, _, context = sentiment
    assert_refused(post(writer_api, task, sentiment_body(context, colour="red")), "colour", "not an accepted field")


def test_body_that_is_not_an_object_is_refused(writer_api, sentiment):
    task, _, _ = sentiment
    response = post(writer_api, task, ["not", "an", "object"])
    assert response.status_code == 400
    assert "JSON object" in response.data["detail"]


def test_negative_time_spent_is_refused(writer_api, sentiment):
    task, _, context = sentiment
    assert_refused(post(writer_api, task, sentiment_body(context, time_spent_ms=-5)), "time_spent_ms", "greater than or equal")


def test_qa_answer_with_leading_space_is_trimmed_to_the_passage(writer_api, qa):
    task, _, context = qa
    start = QA_PASSAGE.index(" 1889")
    response = post(writer_api, task, qa_body(context, target={"text": " 1889", "start": start}))
    assert response.status_code in (201, 202), response.content
    assert Example.objects.get().target == {"text": "1889", "start": start + 1}
