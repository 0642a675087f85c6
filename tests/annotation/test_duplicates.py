"""A near-duplicate of the writer's recent example is refused: the same normalised input that the model reads
(on sentiment the text alone, whatever the prompt; on NLI the hypothesis with its premise), over the task's
rounds, and from accounts linked to the writer's too."""

from __future__ import annotations

import pytest

from annotation.fingerprints import normalise
from annotation.models import Example
from tasks.models import Round
from tests.annotation.conftest import nli_body, sentiment_body
from tests.factories import ContextFactory, ExampleFactory, RoundFactory, UserFactory

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


def test_the_same_text_by_another_writer_is_new(writer_api, sentiment, api):
    from tasks import roles

    task, _, context = sentiment
    body = sentiment_body(context)
    assert post(writer_api, task, body).status_code in (201, 202)
    colleague = UserFactory(username="colleague")
    roles.grant(colleague, roles.ANNOTATOR)
    api.force_authenticate(colleague)
    assert post(api, task, body).status_code in (201, 202)
    assert Example.objects.count() == 2


def test_the_same_sentence_under_another_prompt_is_a_duplicate_on_sentiment(writer_api, sentiment):
    """The prompt is inspiration the model never reads: the same sentence is the same model input, so it is
    paid once. (This test replaced one that accepted it: the old rule compared texts on one context only.)"""
    task, round, context = sentiment
    first = post(writer_api, task, sentiment_body(context))
    other_prompt = ContextFactory(task=task, round=round, payload={"prompt": "Another prompt."})
    again = post(writer_api, task, sentiment_body(other_prompt, input={"text": "what a wonderful slow evening"}))
    assert first.status_code in (201, 202)
    assert again.status_code == 409 and again.data["code"] == "duplicate"
    assert again.data["duplicate_of"] == first.data["id"] and "reads only your text" in again.data["detail"]
    assert Example.objects.count() == 1


def test_the_same_hypothesis_under_another_premise_is_a_new_example_on_nli(writer_api, nli):
    """The premise is part of what the NLI model reads: another premise, another model input."""
    task, round, context = nli
    other_premise = ContextFactory(task=task, round=round, payload={"premise": "Two dogs run across a field."})
    assert post(writer_api, task, nli_body(context)).status_code in (201, 202)
    assert post(writer_api, task, nli_body(other_premise)).status_code in (201, 202)
    assert Example.objects.count() == 2


def test_the_same_hypothesis_on_the_same_premise_is_a_duplicate_even_as_another_context(writer_api, nli):
    task, round, context = nli
    same_text = ContextFactory(task=task, round=round, payload={"premise": context.payload["premise"] + " "})
    first = post(writer_api, task, nli_body(context))
    again = post(writer_api, task, nli_body(same_text))
    assert again.status_code == 409 and again.data["duplicate_of"] == first.data["id"]
    assert "for this context" in again.data["detail"]


def test_a_duplicate_of_an_earlier_rounds_example_is_refused(writer_api, writer, sentiment):
    task, earlier, context = sentiment
    old = ExampleFactory(round=earlier, author=writer, context=context, input={"text": "Same text, round after round."})
    Round.objects.filter(pk=earlier.pk).update(status=Round.Status.CLOSED)
    later = RoundFactory(task=task, number=2)
    new_context = ContextFactory(task=task, round=later, payload={"prompt": "A prompt of round 2."})
    again = post(writer_api, task, sentiment_body(new_context, input={"text": "same text round after round"}))
    assert again.status_code == 409 and again.data["duplicate_of"] == old.pk


def test_the_same_text_from_a_linked_account_is_refused_without_naming_its_example(sentiment, api):
    """Two accounts of one worker id (two studies' accounts of one person): one example, paid once."""
    from accounts.services import record_external
    from tasks import roles

    task, _, context = sentiment
    first_account, second_account = UserFactory(username="study-a"), UserFactory(username="study-b")
    for user in (first_account, second_account):
        record_external(user, "prolific", "SAMEPERSON")
        roles.grant(user, roles.ANNOTATOR)
    api.force_authenticate(first_account)
    assert post(api, task, sentiment_body(context)).status_code in (201, 202)
    api.force_authenticate(second_account)
    again = post(api, task, sentiment_body(context))
    assert again.status_code == 409 and again.data["code"] == "duplicate"
    assert "linked to yours" in again.data["detail"] and "duplicate_of" not in again.data
    assert Example.objects.count() == 1


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


def test_a_duplicate_is_found_however_many_examples_the_writer_wrote_since(writer_api, writer, sentiment):
    """The check is one indexed lookup of the stored fingerprint (issue 27), not a scan of the latest 500 examples:
    it finds the first example behind 600 newer ones, and its cost does not grow with them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.duplicates import find_duplicate
    from annotation.fingerprints import fingerprint

    task, round_, context = sentiment
    first = ExampleFactory(round=round_, author=writer, context=context, input={"text": "The very first one."})
    Example.objects.bulk_create([
        Example(round=round_, author=writer, context=context, input={"text": f"Another sentence, number {i}."},
                target="positive", model_key=fingerprint(task, context.payload, {"text": f"Another sentence, number {i}."}))
        for i in range(600)])
    again = post(writer_api, task, sentiment_body(context, input={"text": "the VERY first one"}))
    assert again.status_code == 409 and again.data["duplicate_of"] == first.pk
    with CaptureQueriesContext(connection) as queries:
        assert find_duplicate(writer, task, context.payload, {"text": "Something never written."}) is None
    assert len(queries) <= 2  # the linked accounts' keys (cached in a request) and the one lookup


def test_an_example_saved_without_the_submission_service_gets_its_fingerprint(writer, sentiment):
    """Imports, fixtures and admin edits save through the model: the key is filled on save, as a submission fills
    it, so the duplicate check sees them."""
    from annotation.fingerprints import fingerprint

    task, round_, context = sentiment
    example = ExampleFactory(round=round_, author=writer, context=context, input={"text": "Saved directly."})
    assert example.model_key == fingerprint(task, context.payload, {"text": "saved directly"})


def test_the_migration_fills_the_fingerprint_of_existing_examples(writer, nli):
    """Examples saved before the fingerprint existed get the one a new example gets (NLI: with its premise)."""
    import importlib

    from django.apps import apps

    from annotation.fingerprints import fingerprint

    task, round_, context = nli
    example = ExampleFactory(round=round_, author=writer, context=context, input={"hypothesis": "A cat sleeps."})
    Example.objects.filter(pk=example.pk).update(model_key="")
    migration = importlib.import_module("annotation.migrations.0008_example_model_key")
    migration.fill_model_keys(apps, None)
    example.refresh_from_db()
    assert example.model_key == fingerprint(task, context.payload, {"hypothesis": "a cat sleeps"})
    other = ContextFactory(task=task, round=round_, payload={**context.payload, "premise": "Another premise."})
    assert fingerprint(task, other.payload, {"hypothesis": "A cat sleeps."}) != example.model_key
