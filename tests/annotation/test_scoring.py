"""Scoring with real tiny models in process: the verdict, "fooled" decided on the server, and recovery."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

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


# --- verdicts that arrive together are scored in one forward pass (the worker gathers what is queued) -----------


@pytest.fixture
def queued(writer_api, sentiment, deploy, monkeypatch):
    """Three submissions whose scoring jobs are still queued (no worker has taken them yet); the second asked
    for no word map."""
    task, round, context = sentiment
    deploy(round)
    monkeypatch.setattr("annotation.jobs.enqueue_scoring", lambda *args, **kwargs: None)
    ids = []
    for i, text in enumerate(("The soup was wonderful.", "The bread came late.", "A fair price, all in all.")):
        body = {**sentiment_body(context, input={"text": text}), **({"word_map": False} if i == 1 else {})}
        response = post(writer_api, task, body)
        assert response.status_code == 202
        ids.append(response.data["id"])
    monkeypatch.undo()
    return round, ids


def test_a_workers_job_scores_what_is_queued_in_one_forward_pass(queued, monkeypatch):
    round, ids = queued
    alone = {pk: scoring.predict(round, [scoring.model_input_for(Example.objects.get(pk=pk))])[0]["ensemble"]
             for pk in ids}
    passes, maps = [], []
    real_predict = scoring.predict
    monkeypatch.setattr(scoring.batching, "predict", lambda r, inputs, **kw: passes.append(len(inputs)) or real_predict(r, inputs, **kw))
    monkeypatch.setattr(jobs, "enqueue_map", lambda pk, asked=False: maps.append(pk))
    assert jobs.score_example.run(ids[0]) == "scored"  # a worker's job: not eager, so it gathers
    assert passes == [3]
    for pk in ids:
        example = Example.objects.get(pk=pk)
        assert example.scoring_state == "scored" and example.scoring_attempts == 1
        assert example.ensemble_prediction["label"] == alone[pk]["label"]  # the same verdict as scored alone
        for label, p in alone[pk]["probs"].items():
            assert abs(example.ensemble_prediction["probs"][label] - p) < 1e-4
    assert maps == [ids[0], ids[2]]  # the one that asked for no map has none queued ...
    assert Example.objects.get(pk=ids[1]).explanation_state == "unavailable"  # ... and says so
    # The others' own jobs come later and find their verdicts stored: nothing is scored twice.
    assert [jobs.score_example.run(pk) for pk in ids[1:]] == ["skipped", "skipped"]
    assert passes == [3] and maps == [ids[0], ids[2]]


def test_a_gathered_example_is_left_to_its_batch_by_its_own_job(queued, monkeypatch):
    """While a batch holds a gathered example's claim, that example's own job does not take the claim over."""
    round, ids = queued
    first = Example.objects.get(pk=ids[0])
    token = scoring.claim(first)
    taken = scoring.gathered(first, 5)
    assert [e.pk for e, _ in taken] == ids[1:]
    assert scoring.score_batch(ids[1], gather=16).outcome == scoring.Outcome.SKIPPED
    assert Example.objects.get(pk=ids[1]).scoring_state == "pending"  # still the batch's to store
    verdicts = scoring.predict(round, [scoring.model_input_for(e) for e in (first, *(e for e, _ in taken))])
    assert scoring._store_verdict(first, token, verdicts[0]) == scoring.Outcome.SCORED
    assert all(scoring._store_verdict(e, t, v) == scoring.Outcome.SCORED for (e, t), v in zip(taken, verdicts[1:], strict=True))


def test_a_batch_that_fails_keeps_every_example_and_the_sweep_scores_them(queued, outage, settings):
    round, ids = queued
    outage.start()
    with pytest.raises(scoring.ScoringDeferred):
        scoring.score_batch(ids[0], gather=16)
    assert [(e.scoring_state, e.scoring_attempts) for e in Example.objects.order_by("pk")] == [("pending", 1)] * 3
    assert all("unreachable" in e.scoring_error for e in Example.objects.all())
    outage.end()
    settings.SCORING_RETRY_BASE_SECONDS = 0
    call_command("score_pending")
    assert set(Example.objects.values_list("scoring_state", flat=True)) == {"scored"}


def test_a_batch_gathers_only_its_own_rounds_untried_examples(queued, nli, deploy, monkeypatch):
    round, ids = queued
    Example.objects.filter(pk=ids[2]).update(scoring_attempts=1)  # tried before: its retry is its own job's
    task, other_round, context = nli
    deploy(other_round)
    stranger = Example.objects.create(round=other_round, context=context, author=Example.objects.get(pk=ids[0]).author,
                                      input={"hypothesis": "Nobody came."}, target="contradiction")
    first = Example.objects.get(pk=ids[0])
    assert scoring.claim(first) == 1
    assert [e.pk for e, _ in scoring.gathered(first, 16)] == [ids[1]]
    assert Example.objects.get(pk=stranger.pk).scoring_attempts == 0


def test_a_batch_costs_a_fixed_number_of_queries_per_example(queued, monkeypatch):
    """The worker's side of a verdict (issue 27): claim, store and queue row per example, and the task's language
    model opponent looked up once per batch, not once per verdict."""
    round, ids = queued
    task = round.task
    task.config = {**task.config, "opponent": {**task.config.get("opponent", {}), "enabled": True}}
    task.save()  # the opponent on (none trained yet: its lookup is what this counts)
    monkeypatch.setattr(jobs, "enqueue_map", lambda pk, asked=False: None)  # the explainer's work, not this job's
    with CaptureQueriesContext(connection) as captured:
        assert jobs.score_example.run(ids[0]) == "scored"
    queries = [q["sql"] for q in captured.captured_queries
               if not q["sql"].upper().startswith(("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE", "ROLLBACK"))]
    # per batch: the job's example, its claim, the queued ones, the round's ensemble and its members, the opponent;
    # per example: its claim (the job's own counted above), its verdict, its queue row. 6 + 3 x 3 - 1 = 14.
    assert len(queries) <= 14, "\n".join(q[:120] for q in queries)
    assert sum('FROM "modelzoo_modelversion"' in q and "llm" in q for q in queries) == 1


def test_a_job_that_asks_for_no_map_stores_its_verdict_with_the_map_unavailable(queued, monkeypatch, settings):
    """`word_map=False` as the job's own argument (jobs queued before the submission recorded it): the verdict is
    stored with its map unavailable, "not requested", in the same write, and no map job follows."""
    _, ids = queued
    Example.objects.filter(pk=ids[0]).update(metadata={})
    maps = []
    monkeypatch.setattr(jobs, "enqueue_map", lambda pk, asked=False: maps.append(pk))
    settings.SCORING_BATCH_MAX = 1  # this example alone
    assert jobs.score_example.run(ids[0], False) == "scored"
    example = Example.objects.get(pk=ids[0])
    assert (example.explanation_state, example.explanation_error) == ("unavailable", jobs.NOT_REQUESTED)
    assert maps == []


def test_the_own_job_of_an_example_a_batch_scored_skips_it_without_a_database_read(queued, monkeypatch):
    """Under load most jobs find their example scored by an earlier batch: they learn it from the batch's mark in
    the cache, not from the row (issue 27). An example whose batch failed is unmarked (the sweep's test above)."""
    _, ids = queued
    monkeypatch.setattr(jobs, "enqueue_map", lambda pk, asked=False: None)
    assert jobs.score_example.run(ids[0]) == "scored"
    with CaptureQueriesContext(connection) as captured:
        assert [jobs.score_example.run(pk) for pk in ids[1:]] == ["skipped", "skipped"]
    assert captured.captured_queries == []
    assert all(Example.objects.get(pk=pk).scoring_attempts == 1 for pk in ids)  # scored once each
