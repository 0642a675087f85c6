"""The verdict first, its word map second: the map is a job of its own that follows the stored verdict.

Writers get the verdict as soon as the ensemble's forward pass is done; the map arrives after it ("pending",
then "ready"), is retried on a serving error, is dropped as "unavailable" (with the reason) when it could not
start in time or the server keeps failing, and can be asked for again by the writer or an owner.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import scoring
from annotation.models import Example
from tests.annotation.conftest import sentiment_body
from zoo.types import BackendError

# on_commit must fire for the scoring and map jobs to run, so these tests commit for real.
pytestmark = pytest.mark.django_db(transaction=True)


def submit(api, task, context) -> dict:
    response = api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert response.status_code == 201, response.content
    return response.data


def test_a_verdict_comes_with_its_word_map_over_the_whole_ensemble(writer_api, sentiment, deploy):
    task, round, context = sentiment
    deploy(round)
    data = submit(writer_api, task, context)  # embedded default: the map job ran inline after the verdict
    assert data["scoring_state"] == "scored" and data["explanation_state"] == "ready"
    explanation = data["explanation"]
    assert explanation["members"] == 2 and explanation["method"] == "occlusion"
    assert explanation["target"] == data["ensemble_prediction"]["label"]  # it explains the ensemble's answer
    assert any("wonderful" in w["word"] for w in explanation["words"])


def test_a_failing_map_never_touches_the_verdict_and_can_be_asked_for_again(writer_api, sentiment, deploy,
                                                                             monkeypatch, settings):
    task, round, context = sentiment
    deploy(round)
    settings.EXPLANATION_MAX_RETRIES = 2
    real = scoring.maps.explain_verdict

    def down(*args, **kwargs):
        raise BackendError("model server unreachable (connection refused)", retryable=True)

    monkeypatch.setattr(scoring.maps, "explain_verdict", down)
    data = submit(writer_api, task, context)
    assert data["scoring_state"] == "scored" and isinstance(data["fooled"], bool)  # the verdict is there
    assert data["explanation_state"] == "pending" and "unreachable" in data["explanation_error"]
    example_id = data["id"]

    assert scoring.explain_example(example_id) == scoring.Outcome.FAILED  # the second and last try
    data = writer_api.get(f"/api/examples/{example_id}/").data
    assert data["explanation_state"] == "unavailable" and data["explanation"] is None
    assert data["scoring_state"] == "scored" and data["ensemble_prediction"]

    monkeypatch.setattr(scoring.maps, "explain_verdict", real)  # the server is back: the writer asks again
    data = writer_api.post(data["links"]["word_map"]).data
    assert data["explanation_state"] == "ready" and data["explanation"]["words"]
    assert data["explanation_error"] == ""


def test_a_map_that_waited_too_long_is_dropped_with_the_reason_and_the_verdict_stays(writer_api, sentiment, deploy,
                                                                                      settings, monkeypatch):
    task, round, context = sentiment
    deploy(round)
    monkeypatch.setattr("annotation.jobs.enqueue_map", lambda example_id: None)  # its job is stuck in a queue
    data = submit(writer_api, task, context)
    assert data["explanation_state"] == "pending"
    settings.EXPLANATION_MAX_AGE_SECONDS = 60
    Example.objects.filter(pk=data["id"]).update(explanation_queued_at=timezone.now() - timedelta(seconds=61))

    data = writer_api.post(data["links"]["score"]).data  # the page's poll
    assert data["explanation_state"] == "unavailable" and "busy" in data["explanation_error"]
    assert scoring.explain_example(data["id"]) == scoring.Outcome.SKIPPED  # the late job does not compute it
    assert data["scoring_state"] == "scored"


def test_the_sweep_gives_up_on_maps_whose_job_was_lost(writer_api, sentiment, deploy, settings, monkeypatch):
    task, round, context = sentiment
    deploy(round)
    monkeypatch.setattr("annotation.jobs.enqueue_map", lambda example_id: None)
    data = submit(writer_api, task, context)
    settings.EXPLANATION_MAX_AGE_SECONDS = 1
    settings.SCORING_STALE_SECONDS = 1
    Example.objects.filter(pk=data["id"]).update(explanation_queued_at=timezone.now() - timedelta(seconds=5))
    from annotation.jobs import score_pending

    score_pending()
    assert Example.objects.get(pk=data["id"]).explanation_state == "unavailable"


def test_no_map_is_asked_for_before_the_verdict(writer_api, sentiment, settings):
    task, round, context = sentiment  # no models deployed: the example waits for its verdict
    response = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert response.status_code == 202
    answer = writer_api.post(response.data["links"]["word_map"])
    assert answer.status_code == 409 and "no verdict yet" in str(answer.data)


def test_a_map_whose_writer_has_moved_on_is_dropped_before_it_runs_and_computed_when_asked(
        writer_api, sentiment, deploy, monkeypatch):
    task, round, context = sentiment
    deploy(round)
    queued: list[int] = []
    monkeypatch.setattr("annotation.jobs.enqueue_map", lambda example_id, asked=False: queued.append(example_id))
    first = submit(writer_api, task, context)  # its map job waits in a busy queue…
    body = sentiment_body(context)
    body["input"] = {"text": "A second, different sentence about the film."}
    second = writer_api.post(f"/api/tasks/{task.slug}/examples/", body, format="json").data  # …while they write on
    assert first["explanation_state"] == second["explanation_state"] == "pending"
    computed = []
    real = scoring.maps.explain_verdict
    monkeypatch.setattr(scoring.maps, "explain_verdict", lambda *a, **k: computed.append(1) or real(*a, **k))

    assert scoring.explain_example(first["id"]) == scoring.Outcome.SUPERSEDED  # nobody is looking at it
    assert scoring.explain_example(second["id"]) == scoring.Outcome.MAPPED  # the one on their screen
    assert len(computed) == 1
    dropped = writer_api.get(f"/api/examples/{first['id']}/").data
    assert dropped["explanation_state"] == "unavailable" and "moved on" in dropped["explanation_error"]
    assert dropped["scoring_state"] == "scored" and dropped["ensemble_prediction"]  # the verdict is untouched

    monkeypatch.undo()  # the map job runs inline again
    asked = writer_api.post(dropped["links"]["word_map"]).data  # from My examples, or an owner
    assert asked["explanation_state"] == "ready" and asked["explanation"]["words"]
