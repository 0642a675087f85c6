"""Scoring with real tiny models in process: the verdict, "fooled" decided on the server, and recovery."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation import jobs, scoring
from annotation.models import Example
from tests.annotation.conftest import nli_body, qa_body, sentiment_body
from tests.factories import ContextFactory
from zoo.serving.torchserve import TorchServeBackend, TorchServeError

# on_commit must fire for the scoring job to run, so these tests commit for real.
pytestmark = pytest.mark.django_db(transaction=True)


def post(client, task, body):
    return client.post(f"/api/tasks/{task.slug}/examples/", body, format="json")






def assert_verdict(data: dict, members: int = 2) -> None:
    assert data["scoring_state"] == "scored"
    assert isinstance(data["fooled"], bool)
    assert len(data["model_predictions"]) == members and len(data["model_versions"]) == members
    assert data["explanation"]["words"], data["explanation"]


def test_sentiment_example_is_scored_at_once_with_probabilities_and_explanation(writer_api, sentiment, deploy):
    task, round, context = sentiment
    deploy(round)
    response = post(writer_api, task, sentiment_body(context))
    assert response.status_code == 201, response.content
    data = response.data
    assert_verdict(data)
    probs = data["ensemble_prediction"]["probs"]
    assert set(probs) == {"positive", "negative", "neutral"} and abs(sum(probs.values()) - 1) < 1e-4
    assert data["fooled"] == (data["ensemble_prediction"]["label"] != "positive")
    assert any("wonderful" in w["word"] for w in data["explanation"]["words"])


def test_nli_example_is_scored_on_the_premise(writer_api, nli, deploy):
    task, round, context = nli
    deploy(round)
    data = post(writer_api, task, nli_body(context)).data
    assert_verdict(data)
    assert data["fooled"] == (data["ensemble_prediction"]["label"] != "contradiction")
    assert {w.get("segment") for w in data["explanation"]["words"]} == {0, 1}  # premise and hypothesis


def test_qa_example_is_scored_against_the_highlighted_answer(writer_api, qa, deploy):
    from tasks.kinds.qa import f1_score

    task, round, context = qa
    deploy(round)
    data = post(writer_api, task, qa_body(context)).data
    assert_verdict(data)
    span = data["ensemble_prediction"]
    assert context.payload["passage"][span["start"]:span["end"]] == span["text"]
    assert data["fooled"] == (f1_score(span["text"], "1889") < task.typed_config.f1_threshold)


def test_fooled_is_decided_from_the_stored_prediction(api, sentiment, deploy):
    from tasks import roles
    from tests.factories import UserFactory

    task, round, context = sentiment
    deploy(round)
    # The same text with three labels, by three writers: one writer's second copy would be a duplicate (the
    # model reads no context, so another prompt does not make it another example: annotation.duplicates).
    for label in ("positive", "negative", "neutral"):
        writer = UserFactory(username=f"writer-{label}")
        roles.grant(writer, roles.ANNOTATOR)
        api.force_authenticate(writer)
        shown = ContextFactory(task=task, round=round, payload={"prompt": f"A prompt for {label}."})
        assert post(api, task, sentiment_body(shown, target=label)).status_code in (201, 202)
    for example in Example.objects.all():
        assert example.fooled == (example.ensemble_prediction["label"] != example.target)
    assert Example.objects.filter(fooled=False).count() == 1  # the model agrees with exactly one target


def test_an_idempotent_replay_returns_the_verdict_of_the_first(writer_api, sentiment, deploy):
    task, round, context = sentiment
    deploy(round)
    first = post(writer_api, task, sentiment_body(context, idempotency_key="same"))
    again = post(writer_api, task, sentiment_body(context, idempotency_key="same"))
    assert again.status_code == 200 and again.data["id"] == first.data["id"]
    assert again.data["fooled"] == first.data["fooled"] and again.data["scoring_attempts"] == 1


def test_backend_down_keeps_the_example_and_scores_it_after_recovery(writer_api, sentiment, deploy, outage, settings):
    task, round, context = sentiment
    deploy(round)
    outage.start()
    response = post(writer_api, task, sentiment_body(context))
    assert response.status_code == 202
    assert response.data["scoring_state"] == "pending" and response.data["fooled"] is None
    example = Example.objects.get()
    assert example.scoring_attempts == 1 and "unreachable" in example.scoring_error

    settings.SCORING_RETRY_BASE_SECONDS = 3600  # not yet due: a poll does not hammer the server
    assert writer_api.post(f"/api/examples/{example.pk}/score/").data["scoring_state"] == "pending"

    outage.end()  # the model server is back
    settings.SCORING_RETRY_BASE_SECONDS = 0
    assert writer_api.get(f"/api/examples/{example.pk}/").data["scoring_state"] == "pending"  # reading changes nothing
    data = writer_api.post(f"/api/examples/{example.pk}/score/").data
    assert_verdict(data)
    assert data["scoring_attempts"] == 2 and data["scoring_error"] == ""
    assert Example.objects.count() == 1


def test_the_sweep_scores_everything_left_pending_by_an_outage(writer_api, sentiment, deploy, outage, settings):
    task, round, context = sentiment
    deploy(round)
    outage.start()
    for text in ("one good day", "two bad days", "three fine days"):
        post(writer_api, task, sentiment_body(context, input={"text": text}))
    assert set(Example.objects.values_list("scoring_state", flat=True)) == {"pending"}
    outage.end()
    settings.SCORING_RETRY_BASE_SECONDS = 0
    call_command("score_pending")
    assert set(Example.objects.values_list("scoring_state", flat=True)) == {"scored"}


def test_a_round_without_models_delays_the_verdict_until_they_are_deployed(writer_api, sentiment, deploy, settings):
    task, round, context = sentiment
    example_id = post(writer_api, task, sentiment_body(context)).data["id"]
    assert "no deployed model ensemble" in Example.objects.get(pk=example_id).scoring_error
    deploy(round)
    settings.SCORING_RETRY_BASE_SECONDS = 0
    assert_verdict(writer_api.post(f"/api/examples/{example_id}/score/").data)


def test_a_non_retryable_error_marks_failed_and_keeps_the_example(writer_api, sentiment, deploy, outage,
                                                                  settings, monkeypatch):
    def broken(self, models, inputs):  # what TorchServe's answer 500 (a broken handler) becomes
        raise TorchServeError(f"model {models[0].name} is broken", retryable=False, status=500)

    def broken_map(self, models, model_input, method, target=None):
        raise TorchServeError(f"model {models[0].name} is broken", retryable=False, status=500)

    monkeypatch.setattr(TorchServeBackend, "predict", broken)
    monkeypatch.setattr(TorchServeBackend, "explain_ensemble", broken_map)  # a verdict comes with its map
    task, round, context = sentiment
    deploy(round)
    outage.start()
    response = post(writer_api, task, sentiment_body(context))
    assert response.status_code == 201 and response.data["scoring_state"] == "failed"
    assert "is broken" in response.data["scoring_error"]
    outage.end()
    call_command("score_pending", "--include-failed")
    assert Example.objects.get().scoring_state == "scored"


def test_an_example_waiting_for_the_round_s_first_models_never_gives_up_and_is_scored_at_deploy(
        writer_api, sentiment, deploy, settings):
    """`make run` trains the demo models in the background: a writer polling meanwhile must not use up the
    example's tries (it was failed after SCORING_MAX_RETRIES polls before)."""
    settings.SCORING_MAX_RETRIES, settings.SCORING_RETRY_BASE_SECONDS = 2, 0
    task, round, context = sentiment
    example_id = post(writer_api, task, sentiment_body(context)).data["id"]
    for _ in range(5):
        assert writer_api.post(f"/api/examples/{example_id}/score/").data["scoring_state"] == "pending"
    assert Example.objects.get(pk=example_id).scoring_attempts >= 3  # more tries than the limit, still pending
    deploy(round)
    assert writer_api.post(f"/api/examples/{example_id}/score/").data["scoring_state"] == "scored"


def test_two_workers_never_store_two_verdicts(writer_api, sentiment, deploy):
    task, round, context = sentiment
    example_id = post(writer_api, task, sentiment_body(context)).data["id"]  # no models yet: pending
    stale = Example.objects.get(pk=example_id)
    first = scoring.claim(stale)
    assert first is not None
    assert scoring.claim(stale) is None  # the same snapshot cannot be claimed twice
    second = scoring.claim(Example.objects.get(pk=example_id))  # a redelivered job takes over
    deploy(round)
    verdict = scoring.predict(round, [scoring.model_input_for(stale)])[0]
    assert scoring._store_verdict(stale, first, verdict) == scoring.Outcome.SKIPPED  # superseded
    assert scoring._store_verdict(stale, second, verdict) == scoring.Outcome.SCORED
    assert scoring.score_example(example_id) == scoring.Outcome.SKIPPED  # already scored: a no-op
    assert Example.objects.get(pk=example_id).scoring_attempts == second


def test_sandbox_scores_but_stores_nothing(writer_api, sentiment, deploy):
    task, round, context = sentiment
    deploy(round)
    used = context.__class__.objects.get(pk=context.pk).times_used
    for url in (f"/api/tasks/{task.slug}/sandbox/", f"/api/tasks/{task.slug}/examples/?sandbox=1"):
        response = writer_api.post(url, sentiment_body(context), format="json")
        assert response.status_code == 200, response.content
        assert response.data["sandbox"] is True and isinstance(response.data["fooled"], bool)
        assert len(response.data["model_predictions"]) == 2
    assert not Example.objects.exists()
    assert context.__class__.objects.get(pk=context.pk).times_used == used


def test_sandbox_validates_like_a_submission(writer_api, sentiment, deploy):
    task, round, context = sentiment
    response = writer_api.post(f"/api/tasks/{task.slug}/sandbox/", sentiment_body(context, target="meh"), format="json")
    assert response.status_code == 400 and "target" in response.data["errors"]


def test_sandbox_with_outage_is_503_with_retry_after(writer_api, sentiment, deploy, outage):
    task, round, context = sentiment
    deploy(round)
    outage.start()
    response = writer_api.post(f"/api/tasks/{task.slug}/sandbox/", sentiment_body(context), format="json")
    assert response.status_code == 503 and response["Retry-After"]
    assert not Example.objects.exists()


def test_concurrent_polls_re_enqueue_a_due_example_once(writer_api, sentiment, settings):
    task, _, context = sentiment  # no models: every attempt fails and the example stays pending
    example_id = post(writer_api, task, sentiment_body(context)).data["id"]
    settings.SCORING_RETRY_BASE_SECONDS = 0
    seen_by_two_polls = Example.objects.get(pk=example_id)
    assert jobs.revive_if_due(seen_by_two_polls) is True
    assert jobs.revive_if_due(seen_by_two_polls) is False
    example = Example.objects.get(pk=example_id)
    assert example.scoring_attempts == 2 and example.scoring_state == "pending"


def test_sandbox_with_a_broken_model_is_502_saying_which(writer_api, sentiment, deploy):
    from modelzoo.models import ModelVersion

    task, round, context = sentiment
    deploy(round)
    ModelVersion.objects.filter(task=task).update(artifact="gone")  # retrying cannot help
    response = writer_api.post(f"/api/tasks/{task.slug}/sandbox/", sentiment_body(context), format="json")
    assert response.status_code == 502 and "no artifact" in response.data["detail"]
    assert response.data["code"] == "model_failed" and "Retry-After" not in response
