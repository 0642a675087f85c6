"""The writing assistant: who may ask, what a writer gets back, what a provider outage does, and the provenance
every example records (stored, exported, compared on the round dashboard)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Assistance, Example, Suggestion
from exports.records import record_batches
from rounds.dashboard import assistant_comparison
from tasks import roles
from tests.annotation.conftest import make_task, sentiment_body
from tests.factories import UserFactory
from tests.llm.endpoints import down_endpoint, use_endpoint

pytestmark = pytest.mark.django_db

DOWN = {"provider": "openai", "endpoint": "down", "timeout_s": 2}


@pytest.fixture(autouse=True)
def _jobs_inline(settings):
    """The suggestion job runs in the request's own test transaction (a thread would not see its rows)."""
    settings.JOB_RUNNER = "inline"


@pytest.fixture(autouse=True)
def _down_endpoint(settings):
    """The operator's endpoint "down", on a port nothing listens on (what DOWN picks)."""
    down_endpoint(settings, model="smollm2")


def assistant_task(provider: dict | None = None, kind: str = "sentiment", **settings):
    provider = provider or DOWN
    return make_task(kind, slug=f"{kind}-assisted",
                     config={"assistant": {"enabled": True, "provider": provider, **settings}})


def ask(client, task, context, target="positive"):
    return client.post(reverse("api-suggestion-create", args=[task.slug]),
                       {"context_id": context.pk, "target": target}, format="json")


def ready_suggestion(writer, round_, context, texts, target="positive") -> Suggestion:
    """A suggestion request as the job leaves it (the texts a model wrote, with their verdicts)."""
    return Suggestion.objects.create(
        round=round_, context=context, author=writer, target=target, state=Suggestion.State.READY,
        provider="local", model="SmolLM2-135M-Instruct",
        candidates=[{"text": t, "fooled": i == 0, "ensemble_prediction": {"label": "negative", "probs": {}},
                     "model_predictions": []} for i, t in enumerate(texts)])


# --- who may ask ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("who, status", [("anonymous", 403), ("no role", 403), ("writer", 202), ("suspended", 403)])
def test_who_may_ask_for_suggestions(who, status, api, writer):
    task, round_, context = assistant_task()
    user = {"anonymous": None, "no role": UserFactory(username="nobody"), "writer": writer,
            "suspended": writer}[who]
    if who == "suspended":
        from crowd.members import suspend
        owner = UserFactory(username="owner-x")
        task.owners.add(owner)
        suspend(task, writer.username, by=owner, reason="spam")
    if user is not None:
        api.force_authenticate(user)
    response = ask(api, task, context)
    assert response.status_code in ((401, 403) if who == "anonymous" else (status,)), response.content


def test_only_the_writer_and_the_owners_see_a_suggestion(api, writer):
    task, round_, context = assistant_task()
    suggestion = ready_suggestion(writer, round_, context, ["A slow, delightful evening."])
    url = reverse("api-suggestion-detail", args=[suggestion.pk])
    other = UserFactory(username="other")
    roles.grant(other, roles.ANNOTATOR)
    owner = UserFactory(username="owner")
    task.owners.add(owner)
    for user, status in ((writer, 200), (other, 404), (owner, 200)):
        api.force_authenticate(user)
        assert api.get(url).status_code == status


# --- clear refusals ---------------------------------------------------------------------------------------


def test_the_assistant_is_refused_where_it_is_off_or_cannot_work(writer_api):
    task, _, context = make_task("sentiment", slug="plain")
    response = ask(writer_api, task, context)
    assert response.status_code == 409 and "writing assistant is off" in response.json()["detail"]
    qa, _, qa_context = make_task("qa", slug="qa-assisted", config={"assistant": {"enabled": True}})
    response = ask(writer_api, qa, qa_context, target={"text": "1889", "start": 0})
    assert response.status_code == 409 and "labelled tasks" in response.json()["detail"]


@pytest.mark.parametrize("body, field", [
    ({"target": "delighted"}, "target"),
    ({"target": "positive", "context_id": "seven"}, "context_id"),
    ({"target": "positive", "surprise": 1}, "surprise"),
])
def test_bad_requests_say_what_was_wrong(writer_api, body, field):
    task, _, context = assistant_task()
    payload = {"context_id": context.pk, **body}
    response = writer_api.post(reverse("api-suggestion-create", args=[task.slug]), payload, format="json")
    assert response.status_code == 400
    assert field in response.content.decode()


@pytest.mark.parametrize("provider", [{"endpoint": "http://169.254.169.254/latest"}, {"endpoint": "SECRET_KEY"},
                                      {"endpoint": "default", "base_url": "http://169.254.169.254/"},
                                      {"endpoint": "default", "api_key_env": "LLM_API_KEY"}])
def test_a_task_names_an_operator_endpoint_never_an_address_or_a_key_variable(provider):
    """The key goes only to the operator's endpoints (tests/llm/test_endpoints.py): a task picks one by name."""
    from pydantic import ValidationError

    from tasks.kinds.base import LLMProviderSettings

    with pytest.raises(ValidationError):
        LLMProviderSettings.model_validate({"provider": "openai", **provider})
    assert LLMProviderSettings.model_validate({"provider": "openai", "endpoint": "team"}).endpoint == "team"


# --- a provider that is down -------------------------------------------------------------------------------


def test_a_provider_that_is_down_turns_the_assistant_off_for_that_request_and_submitting_still_works(
        writer_api, writer, deploy):
    task, round_, context = assistant_task()
    deploy(round_)
    response = ask(writer_api, task, context)
    assert response.status_code == 202
    suggestion = writer_api.get(response.json()["link"]).json()
    assert suggestion["state"] == "failed" and suggestion["candidates"] == []
    assert "unavailable" in suggestion["error"] and "submitting works as usual" in suggestion["error"]

    body = sentiment_body(context, suggestion_id=suggestion["id"])
    submitted = writer_api.post(reverse("api-example-create", args=[task.slug]), body, format="json")
    assert submitted.status_code == 201, submitted.content
    example = Example.objects.get(pk=submitted.json()["id"])
    assert example.scoring_state == Example.Scoring.SCORED and example.assistance == Assistance.OWN


def test_a_model_that_writes_nothing_usable_is_asked_again_then_the_writer_is_told(writer_api, deploy, settings):
    """A real OpenAI-compatible HTTP server whose model only describes texts ("This review is…"): the job tries
    three generations, each with its own seed when the task fixes one, then fails the request with a sentence for
    the writer, its tokens counted."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Describer(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.server.requests += 1
            self.server.seeds.append(asked.get("seed"))
            raw = json.dumps({"choices": [{"message": {"content": "This review is about a positive experience."}}
                                          for _ in range(asked.get("n", 1))],
                              "usage": {"prompt_tokens": 50, "completion_tokens": 9}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Describer)
    httpd.requests, httpd.seeds = 0, []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        endpoint = use_endpoint(settings, f"http://127.0.0.1:{httpd.server_address[1]}/v1", model="describer")
        task, round_, context = assistant_task(endpoint, seed=11)
        deploy(round_)
        suggestion = writer_api.get(ask(writer_api, task, context).json()["link"]).json()
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert suggestion["state"] == "failed" and suggestion["candidates"] == []
    assert "nothing usable" in suggestion["error"] and "write your own" in suggestion["error"]
    assert httpd.requests == 3  # one generation of 3 candidates, then two more
    assert httpd.seeds == [11, 14, 17]  # each try samples anew: the same seed would repeat the same texts
    assert suggestion["usage"]["completion_tokens"] == 27 and suggestion["usage"]["calls"] == 3


# --- provenance ---------------------------------------------------------------------------------------------


def submit(client, task, context, text, **extra):
    body = {"context_id": context.pk, "input": {"text": text}, "target": "positive", **extra}
    return client.post(reverse("api-example-create", args=[task.slug]), body, format="json")


def test_provenance_as_suggested_edited_or_own_is_decided_from_the_texts(writer_api, writer, deploy):
    task, round_, context = assistant_task()
    deploy(round_)
    texts = ["Slow service, but I would wait an hour again for that soup.",
             "The waiter took ages, yet the evening was lovely."]
    suggestion = ready_suggestion(writer, round_, context, texts)

    taken = submit(writer_api, task, context, texts[0], suggestion_id=suggestion.pk, suggestion_choice=0)
    edited = submit(writer_api, task, context, "The waiter took ages, yet the evening was wonderful.",
                    suggestion_id=suggestion.pk)
    own = submit(writer_api, task, context, "Honestly the best night out this year.", suggestion_id=suggestion.pk)
    plain = submit(writer_api, task, context, "I smiled all the way home.")
    rows = {r.json()["id"]: r.json() for r in (taken, edited, own, plain)}
    assert all(r.status_code == 201 for r in (taken, edited, own, plain))

    assert rows[taken.json()["id"]]["assistance"] == "as_suggested"
    assert rows[taken.json()["id"]]["edit_distance"] == 0
    assert rows[edited.json()["id"]]["assistance"] == "edited"
    assert rows[edited.json()["id"]]["edit_distance"] == 7  # "lovely" -> "wonderful": 7 characters changed
    assert rows[own.json()["id"]]["assistance"] == "own"
    assert rows[plain.json()["id"]]["assistance"] == ""
    assert Example.objects.get(pk=edited.json()["id"]).suggested_text == texts[1]

    records = {r["example_id"]: r for batch in record_batches(task, Example.objects.filter(round=round_))
               for r in batch}
    assert records[taken.json()["id"]]["assistance"] == "as_suggested"
    assert records[taken.json()["id"]]["assistant_model"] == "local: SmolLM2-135M-Instruct"
    assert records[edited.json()["id"]]["suggested_text"] == texts[1]
    assert records[edited.json()["id"]]["edit_distance"] == 7
    assert records[plain.json()["id"]]["assistance"] is None

    comparison = {row["key"]: row for row in assistant_comparison(round_)}
    assert comparison["without"]["collected"] == 1 and comparison["with"]["collected"] == 3
    assert comparison["as_suggested"]["collected"] == 1 and comparison["edited"]["collected"] == 1


def test_a_chosen_suggestion_counts_as_edited_however_far_it_was_rewritten(writer_api, writer, deploy):
    task, round_, context = assistant_task()
    deploy(round_)
    suggestion = ready_suggestion(writer, round_, context, ["Slow service, lovely food."])
    response = submit(writer_api, task, context, "Everything about tonight made me grin from ear to ear.",
                      suggestion_id=suggestion.pk, suggestion_choice=0)
    assert response.status_code == 201 and response.json()["assistance"] == "edited"
    assert response.json()["edit_distance"] > 20


@pytest.mark.parametrize("extra, field", [
    ({"suggestion_id": 10**9}, "suggestion_id"),
    ({"suggestion_choice": 5}, "suggestion_choice"),
    ({"suggestion_id": "x"}, "suggestion_id"),
])
def test_bad_provenance_is_refused_and_nothing_is_saved(writer_api, writer, deploy, extra, field):
    task, round_, context = assistant_task()
    suggestion = ready_suggestion(writer, round_, context, ["Slow service, lovely food."])
    extra = {"suggestion_id": suggestion.pk, **extra}
    response = submit(writer_api, task, context, "A fine evening.", **extra)
    assert response.status_code == 400 and field in response.content.decode()
    assert not Example.objects.exists()


def test_someone_elses_suggestion_cannot_be_claimed(api, writer):
    task, round_, context = assistant_task()
    suggestion = ready_suggestion(writer, round_, context, ["Slow service, lovely food."])
    other = UserFactory(username="other")
    roles.grant(other, roles.ANNOTATOR)
    api.force_authenticate(other)
    response = submit(api, task, context, "Slow service, lovely food.", suggestion_id=suggestion.pk)
    assert response.status_code == 400 and "not one of yours" in response.content.decode()


# --- with the real packaged model --------------------------------------------------------------------------


@pytest.mark.slow
def test_suggestions_from_the_local_model_arrive_scored_and_their_provenance_is_stored_and_exported(
        writer_api, writer, deploy):
    """The packaged SmolLM2 writes the candidates; the round's live ensemble scores each before the writer sees
    them (whether its answer differs from the label asked for); the writer takes one; the example records where it
    came from; the export carries it."""
    task, round_, context = assistant_task({"provider": "local"})
    deploy(round_)
    response = ask(writer_api, task, context, target="negative")
    assert response.status_code == 202 and response.json()["state"] == "pending"
    suggestion = writer_api.get(response.json()["link"]).json()
    assert suggestion["state"] == "ready", suggestion["error"]
    assert 1 <= len(suggestion["candidates"]) <= 3
    assert "SmolLM2" in suggestion["model"] and suggestion["provider"] == "local"
    assert suggestion["usage"]["completion_tokens"] > 0 and suggestion["usage"]["prompt_tokens"] > 0
    for candidate in suggestion["candidates"]:
        assert candidate["text"].strip() and candidate["text"] != context.payload["prompt"]
        assert isinstance(candidate["models_disagree"], bool)
        assert candidate["ensemble_prediction"]["label"] in ("positive", "negative", "neutral")
        assert candidate["models_disagree"] == (candidate["ensemble_prediction"]["label"] != "negative")

    taken = suggestion["candidates"][0]["text"]
    body = {"context_id": context.pk, "input": {"text": taken}, "target": "negative",
            "suggestion_id": suggestion["id"], "suggestion_choice": 0}
    submitted = writer_api.post(reverse("api-example-create", args=[task.slug]), body, format="json")
    assert submitted.status_code == 201, submitted.content
    assert submitted.json()["assistance"] == "as_suggested"
    record = next(r for batch in record_batches(task, Example.objects.filter(round=round_)) for r in batch)
    assert record["assistance"] == "as_suggested" and record["suggested_text"] == taken
    assert record["assistant_model"].startswith("local: SmolLM2")
